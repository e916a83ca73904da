package ledger

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/ledger/internal/store"
)

// History calls fn with the recorded calls proposed in [since, until) (a
// zero bound is none), each preceded once by what the gate knew of its
// session (api.HistorySessionOf); a call whose session is not recorded
// comes alone. Each call is as proposed (what a replay decides on), as
// ReadHistory reads it from an export: first the calls whose records hold
// their input (their call_proposed event was pruned, or they were
// recorded before 2026-12-02), then the others, in the order they were
// proposed, from the call_proposed events their records name (input_at):
// not a call_proposed event of a call a prune removed since (a fleet's
// prune keeps events it has not published), nor an earlier proposal of a
// tool_use_id proposed again after that. The events are read in the order
// they are stored, each block of them once: read through each call's
// record, one block for each call, a replay of 100,000 calls took four
// times as long. Both are read in one view of the ledger, so that a prune
// moving inputs from events to records meanwhile loses none; the events
// before the chain's base are read too (a prune cut short leaves some,
// which records still name). It holds one call in memory at a time, and
// the seq of each call_proposed event a record names (8 bytes a call).
func (l *Ledger) History(ctx context.Context, since, until time.Time, fn func(api.HistoryItem) error) error {
	all, err := l.Sessions(ctx)
	if err != nil {
		return err
	}
	sessions := make(map[string]api.Session, len(all))
	for _, s := range all {
		sessions[s.ID] = s
	}
	h := historyWriter{since: since, until: until, fn: fn, sessions: sessions, sent: map[string]bool{}}
	return l.store.View(ctx, func(scan store.ScanFunc) error {
		var at []uint64 // the events the records name
		err := scan("c/", "c/", func(_, val []byte) error {
			if seq := refsOf(val).input; seq != 0 {
				at = append(at, seq)
				return nil // in its call_proposed event
			}
			c, _, err := decodeCall(val)
			if err != nil {
				return err
			}
			return h.call(c)
		})
		if err != nil {
			return err
		}
		slices.Sort(at)
		err = scan(eventPrefix, eventPrefix, func(key, val []byte) error {
			seq := eventSeq(key)
			if len(at) > 0 && at[0] < seq {
				return fmt.Errorf("a call's input is in event %d, which the ledger no longer holds: the ledger is damaged (toolgate audit verify)", at[0])
			}
			if len(at) == 0 || at[0] != seq {
				return nil // not a call's, or one no record names
			}
			at = at[1:]
			if gjson.GetBytes(val, "kind").Str != KindCallProposed {
				return fmt.Errorf("a call's input is in event %d, which is not its proposal: the ledger is damaged (toolgate audit verify)", seq)
			}
			c, _, err := decodeCall([]byte(gjson.GetBytes(val, "data").Raw))
			if err != nil {
				return fmt.Errorf("event %d: %w", seq, err)
			}
			return h.call(c)
		})
		if err == nil && len(at) > 0 {
			err = fmt.Errorf("a call's input is in event %d, which the ledger no longer holds: the ledger is damaged (toolgate audit verify)", at[0])
		}
		return err
	})
}

// historyWriter hands History's items on: each call in the window, after
// its session the first time.
type historyWriter struct {
	since, until time.Time
	fn           func(api.HistoryItem) error
	sessions     map[string]api.Session
	sent         map[string]bool
}

func (h *historyWriter) call(c api.Call) error {
	if !api.InWindow(c.ProposedAt, h.since, h.until) {
		return nil
	}
	if s, ok := h.sessions[c.SessionID]; ok && !h.sent[c.SessionID] {
		h.sent[c.SessionID] = true
		hs := api.HistorySessionOf(s)
		if err := h.fn(api.HistoryItem{Session: &hs}); err != nil {
			return err
		}
	}
	return h.fn(api.HistoryItem{Call: &c})
}

// ReadHistory reads an audit export (Export's lines) and calls fn as
// History does, in the order the calls were proposed: each call of a
// call_proposed event in the window, preceded once by its session, as its
// session_started (or last session_updated) event recorded it. It needs no
// ledger, and does not check the chain (VerifyExport does).
func ReadHistory(r io.Reader, since, until time.Time, fn func(api.HistoryItem) error) error {
	h := historyWriter{since: since, until: until, fn: fn, sessions: map[string]api.Session{}, sent: map[string]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for n := 1; sc.Scan(); n++ {
		var e struct {
			Kind string          `json:"kind"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("line %d is not an audit event: %w", n, err)
		}
		if err := h.event(e.Kind, e.Data); err != nil {
			return fmt.Errorf("line %d (%s): %w", n, e.Kind, err)
		}
	}
	return sc.Err()
}

func (h *historyWriter) event(kind string, data json.RawMessage) error {
	switch kind {
	case KindSessionStarted, KindSessionUpdated:
		var s api.Session
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		h.sessions[s.ID] = s
	case KindCallProposed:
		c, _, err := decodeCall(data) // a proposal: its input is in it
		if err != nil {
			return err
		}
		return h.call(c)
	}
	return nil
}
