package ledger

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/toolgate/toolgate/api"
)

// History calls fn with the recorded calls proposed in [since, until) (a
// zero bound is none), in tool_use_id order, each preceded once by what
// the gate knew of its session (api.HistorySessionOf); a call whose session
// is not recorded comes alone. It reads one call at a time: a replay of the
// whole ledger holds no more than one call in memory here.
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
	return l.store.Scan(ctx, "c/", "c/", func(_, val []byte) error {
		c, err := l.decodeCall(val)
		if err != nil {
			return err
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
