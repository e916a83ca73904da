package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// The audit chain is also the outbox of a fleet (package fleet): every
// change is an event, durable and in order before anything is answered,
// so a publisher that copies the events after the last one Postgres holds
// publishes asks, decisions and the audit exactly once each, in order,
// without another write on the hot path.

// EventsAfter returns up to limit events of the audit chain that follow
// event seq, in order, each with its prev_hash (the ledger stores an event
// without it: it is the hash of the event before). Events pruned are not
// there: a seq before the chain's base is an error, as the events after it
// can no longer all be read (a prune in a fleet keeps what is not
// published: Prune's published).
func (l *Ledger) EventsAfter(ctx context.Context, seq uint64, limit int) ([]Event, error) {
	base, err := l.readBase()
	if err != nil {
		return nil, err
	}
	if seq < base.Seq {
		return nil, fmt.Errorf("events %d to %d were pruned: %w", seq+1, base.Seq, ErrNotFound)
	}
	prev := base.Hash
	if seq > base.Seq {
		raw, err := l.store.ReadRaw(eventKey(seq))
		if err != nil {
			return nil, named("audit event", strconv.FormatUint(seq, 10), err)
		}
		prev = gjsonHash(raw)
	}
	var out []Event
	err = l.events(ctx, chainHead{Seq: seq, Hash: prev}, func(_ uint64, e *Event) error {
		if len(out) >= limit {
			return errEnough
		}
		out = append(out, *e)
		return nil
	})
	if errors.Is(err, errEnough) {
		err = nil
	}
	return out, err
}

var errEnough = errors.New("enough")

// Appended is signalled, without blocking the committer, after every batch
// that extended the audit chain: a publisher waits on it.
func (l *Ledger) Appended() <-chan struct{} { return l.appended }

func (l *Ledger) signalAppended() {
	select {
	case l.appended <- struct{}{}:
	default:
	}
}
