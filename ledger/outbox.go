package ledger

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"

	"github.com/toolgate/toolgate/api"
)

// The audit chain is also the outbox of a fleet (package fleet): every
// change is an event, durable and in order before anything is answered,
// so a publisher that copies the events after the last one Postgres holds
// publishes asks, decisions and the audit exactly once each, in order,
// without another write on the hot path.

// EventsAfter returns up to limit events of the audit chain that follow
// event seq, in order.
func (l *Ledger) EventsAfter(ctx context.Context, seq uint64, limit int) ([]Event, error) {
	var out []Event
	err := l.store.Scan(ctx, eventPrefix, eventKey(seq+1), func(key, val []byte) error {
		if len(out) >= limit {
			return errEnough
		}
		var e Event
		if err := json.Unmarshal(val, &e); err != nil {
			return &api.ChainError{Seq: binary.BigEndian.Uint64(key[len(eventPrefix):]), Problem: "modified", Detail: "the event is not valid JSON"}
		}
		out = append(out, e)
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
