package ledger

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
)

// Retention. Prune removes what is older than a date: the audit events
// recorded before it, and the sessions that ended before it with their
// calls, approvals, decisions and write-backs. The chain that remains
// verifies from its first event on: the last event pruned becomes the
// chain's base (m/base, its seq and hash), which the first remaining event
// names as its prev_hash, and the prune itself is an event of the chain
// (audit_pruned, naming the base), so a later export or verify shows that
// the chain was pruned, when, to where, and by whom. Pruning is done in
// steps, each a durable batch: the base and the audit_pruned event first,
// then the deletions: the ended sessions' records, then the events (a call
// that stays first takes into its record what it took from them: its
// input, what the model saw). A crash in between leaves events before the
// base, which the chain no longer reads, and the next prune removes.

// KindAuditPruned is an audit_pruned event: api.Pruned.
const KindAuditPruned = "audit_pruned"

// pruneChunk is how many keys one batch of a prune deletes.
const pruneChunk = 512

// Unpublished means no limit: no event waits to be published (the ledger
// is no fleet's outbox).
const Unpublished = ^uint64(0)

// Prune removes what is older than before (see above) and compacts the
// ledger; by is who asked (from the kernel). published is the last event
// of the chain a fleet holds (see EventsAfter), or Unpublished outside a
// fleet: an event after it is kept, whatever its date, for the publisher
// to copy.
func (l *Ledger) Prune(ctx context.Context, before time.Time, by api.Incident, published uint64) (api.Pruned, error) {
	sessions, err := l.endedBefore(ctx, before)
	if err != nil {
		return api.Pruned{}, err
	}
	base, err := l.readBase()
	if err != nil {
		return api.Pruned{}, err
	}
	first, err := l.firstEventAt(ctx, base, before)
	if err != nil {
		return api.Pruned{}, err
	}
	if published != Unpublished && first > published+1 {
		first = max(published+1, base.Seq+1)
	}
	var doomed [][]string // each session's keys
	calls := 0
	for _, s := range sessions {
		keys, n, err := l.sessionKeys(ctx, s)
		if err != nil {
			return api.Pruned{}, err
		}
		doomed, calls = append(doomed, keys), calls+n
	}
	rec, err := write(ctx, l, func(t *tx) (api.Pruned, error) { return recordPrune(t, before, base, first, len(sessions), calls, by) })
	if err != nil {
		return rec, err
	}
	for _, keys := range doomed {
		if err := l.deleteKeys(ctx, keys); err != nil {
			return rec, err
		}
	}
	// Every event up to the base, those a prune cut short left too. A call
	// that stays keeps its input and what the model saw, which its
	// call_proposed and call_seen events held.
	var keys []string
	var callEvents []callEvent
	err = l.store.Scan(ctx, eventPrefix, eventPrefix, func(key, val []byte) error {
		seq := eventSeq(key)
		if seq > rec.BaseSeq {
			return errExported // done
		}
		keys = append(keys, string(key))
		if r := gjson.GetManyBytes(val, "kind", "subject"); r[0].Str == KindCallProposed || r[0].Str == KindCallSeen {
			callEvents = append(callEvents, callEvent{r[1].Str, seq})
		}
		return nil
	})
	if err != nil && err != errExported {
		return rec, err
	}
	if err := l.keepFromEvents(ctx, callEvents); err != nil {
		return rec, err
	}
	if err := l.deleteKeys(ctx, keys); err != nil {
		return rec, err
	}
	st, err := l.store.Compact(ctx)
	rec.BytesBefore, rec.BytesAfter = st.Before, st.After
	return rec, err
}

// endedBefore lists the sessions that ended before t, but those deferred
// (--on-ask defer) and not yet resumed.
func (l *Ledger) endedBefore(ctx context.Context, t time.Time) ([]string, error) {
	var ids []string
	err := l.store.Scan(ctx, "s/", "s/", func(_, val []byte) error {
		var s api.Session
		if err := json.Unmarshal(val, &s); err != nil {
			return err
		}
		// A deferred session waits for toolgate resume, however old.
		if s.EndedAt != nil && s.EndedAt.Before(t) && s.EndReason != api.EndDeferred {
			ids = append(ids, s.ID)
		}
		return nil
	})
	return ids, err
}

// firstEventAt is the seq of the first event after base recorded at t or
// later (the head's next seq when there is none).
func (l *Ledger) firstEventAt(ctx context.Context, base chainHead, t time.Time) (uint64, error) {
	head, err := l.readHead()
	if err != nil {
		return 0, err
	}
	first := head.Seq + 1
	err = l.events(ctx, base, func(seq uint64, e *Event) error {
		if !e.Time.Before(t) {
			first = seq
			return errExported // found: stop
		}
		return nil
	})
	if err != nil && err != errExported {
		return 0, err
	}
	return first, nil
}

// recordPrune moves the chain's base to the event before first and
// records the prune in the chain.
func recordPrune(t *tx, before time.Time, old chainHead, first uint64, sessions, calls int, by api.Incident) (api.Pruned, error) {
	rec := api.Pruned{Before: before.UTC(), BaseSeq: old.Seq, BaseHash: old.Hash, Sessions: sessions, Calls: calls, ByPID: by.PID, ByExe: by.Exe}
	if first-1 > old.Seq {
		raw, found, err := t.GetRaw(eventKey(first - 1))
		if err != nil {
			return rec, err
		}
		if !found {
			return rec, fmt.Errorf("prune: event %d: %w", first-1, ErrNotFound)
		}
		rec.BaseSeq, rec.BaseHash = first-1, gjsonHash(raw)
		rec.Events = first - 1 - old.Seq
		if err := t.Put(keyBase, chainHead{Seq: rec.BaseSeq, Hash: rec.BaseHash}); err != nil {
			return rec, err
		}
	}
	head, err := t.head()
	if err != nil {
		return rec, err
	}
	rec.Event = head.Seq + 1
	return rec, t.event(KindAuditPruned, "audit", rec)
}

// callEvent is an event a call's record may name (storedCall): its
// call_proposed or a call_seen event, its call, and its seq.
type callEvent struct {
	toolUseID string
	seq       uint64
}

// keepFromEvents writes into the record of each event's call what the
// record takes from that event (its input, what the model saw), where the
// record names it: the events are pruned next.
func (l *Ledger) keepFromEvents(ctx context.Context, events []callEvent) error {
	return inChunks(ctx, l, events, func(t *tx, e callEvent) error {
		raw, found, err := t.GetRaw(callKey(e.toolUseID))
		if err != nil || !found {
			return err
		}
		r := refsOf(raw)
		switch e.seq {
		case r.input:
			r.input = 0
		case r.seen:
			r.seen = 0
		default:
			return nil // not named: the record holds it, or another proposal's
		}
		c, _, err := getCall(t, e.toolUseID)
		if err != nil {
			return err
		}
		return t.Put(callKey(e.toolUseID), storedCall{Call: c, InputAt: r.input, SeenAt: r.seen})
	})
}

// deleteKeys deletes keys.
func (l *Ledger) deleteKeys(ctx context.Context, keys []string) error {
	return inChunks(ctx, l, keys, func(t *tx, k string) error { return t.Delete(k) })
}

// inChunks runs each on every item, pruneChunk items a batch.
func inChunks[T any](ctx context.Context, l *Ledger, items []T, each func(*tx, T) error) error {
	for len(items) > 0 {
		chunk := items[:min(len(items), pruneChunk)]
		items = items[len(chunk):]
		_, err := write(ctx, l, func(t *tx) (struct{}, error) {
			for _, item := range chunk {
				if err := each(t, item); err != nil {
					return struct{}{}, err
				}
			}
			return struct{}{}, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// sessionKeys are the keys of a session and what it holds: its calls
// (those it proposed; a repeat of another session's call leaves that
// call), their approvals, decisions and write-backs, and its index
// entries; calls is how many calls.
func (l *Ledger) sessionKeys(ctx context.Context, id string) (keys []string, calls int, err error) {
	prefix := sessionCallKey(id, "")
	var index []string
	err = l.store.Scan(ctx, prefix, prefix, func(key, _ []byte) error {
		index = append(index, string(key))
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	for _, k := range index {
		tuid := strings.TrimPrefix(k, prefix)
		if c, err := l.Call(ctx, tuid); err == nil && c.SessionID == id {
			calls++
			keys = append(keys, callKey(tuid), writeBackKey(tuid), approvalOfCallKey(tuid))
			var aid string
			if l.read(approvalOfCallKey(tuid), &aid) == nil && aid != "" {
				keys = append(keys, approvalKey(aid), decisionKey(aid), handOffKey(aid))
			}
		}
		keys = append(keys, k)
	}
	return append(keys, sessionKey(id)), calls, nil
}

// eventSeq is the seq of an event key.
func eventSeq(key []byte) uint64 { return binary.BigEndian.Uint64(key[len(eventPrefix):]) }
