package ledger

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
)

// History calls fn with the recorded calls proposed in [since, until) (a
// zero bound is none), each preceded once by what the gate knew of its
// session (api.HistorySessionOf); a call whose session is not recorded
// comes alone. Each call is as proposed (what a replay decides on), as
// ReadHistory reads it from an export: first the calls whose records hold
// their input (their call_proposed event was pruned, or they were
// recorded before 2026-12-02), then the others, in the order they were
// proposed, from their call_proposed events. The events are read in the
// order they are stored, each block of them once: read through each
// call's record, one block for each call, a replay of 100,000 calls took
// four times as long. It holds one call in memory at a time, and the ids
// of the calls whose records hold their input.
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
	held := map[string]bool{}
	err = l.store.Scan(ctx, "c/", "c/", func(_, val []byte) error {
		if !gjson.GetBytes(val, "input").Exists() {
			return nil // in its call_proposed event
		}
		c, _, err := decodeCall(val)
		if err != nil {
			return err
		}
		held[c.ToolUseID] = true
		return h.call(c)
	})
	if err != nil {
		return err
	}
	base, err := l.readBase()
	if err != nil {
		return err
	}
	return l.store.Scan(ctx, eventPrefix, eventKey(base.Seq+1), func(key, val []byte) error {
		r := gjson.GetManyBytes(val, "kind", "subject")
		if r[0].Str != KindCallProposed || held[r[1].Str] {
			return nil
		}
		c, _, err := decodeCall([]byte(gjson.GetBytes(val, "data").Raw))
		if err != nil {
			return fmt.Errorf("event %d: %w", eventSeq(key), err)
		}
		return h.call(c)
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
