package ledger

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
)

// historyInputs runs History and returns each call's input by
// tool_use_id, failing on a call that comes twice.
func historyInputs(t *testing.T, l *Ledger) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := l.History(ctx, time.Time{}, time.Time{}, func(h api.HistoryItem) error {
		if h.Call != nil {
			if _, again := got[h.Call.ToolUseID]; again {
				t.Errorf("history: %s came twice", h.Call.ToolUseID)
			}
			got[h.Call.ToolUseID] = string(h.Call.Input)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	return got
}

func recordCall(t *testing.T, l *Ledger, id, session string) {
	t.Helper()
	call := api.Call{ToolUseID: id, SessionID: session, ToolName: "Bash", Input: json.RawMessage(`{"command":"` + id + `"}`)}
	if _, _, err := l.Record(ctx, call, api.Verdict{Effect: api.EffectAllow, Source: api.SourcePolicy}, true); err != nil {
		t.Fatal(err)
	}
}

// startPrune is Prune's first durable step (the base moves, audit_pruned
// is recorded) and nothing after it: a prune the process died in.
func startPrune(t *testing.T, l *Ledger, before time.Time) api.Pruned {
	t.Helper()
	base, err := l.readBase()
	if err != nil {
		t.Fatal(err)
	}
	first, err := l.firstEventAt(ctx, base, before)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := write(ctx, l, func(t *tx) (api.Pruned, error) { return recordPrune(t, before, base, first, 0, 0, api.Incident{}) })
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// A prune that died after moving the chain's base, before the calls that
// stay took their inputs from the call_proposed events behind it: every
// call still reads (Call, Calls), and History gives them all too.
func TestReviewHistoryAfterAPruneCutShort(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	if _, _, err := l.StartSession(ctx, api.Session{ID: "long"}); err != nil {
		t.Fatal(err)
	}
	recordCall(t, l, "toolu_early", "long")
	c.Add(time.Hour)
	cut := c.Now()
	c.Add(time.Hour)
	recordCall(t, l, "toolu_late", "long")
	rec := startPrune(t, l, cut)
	if rec.BaseSeq == 0 {
		t.Fatalf("the base did not move: %+v", rec)
	}
	if call, err := l.Call(ctx, "toolu_early"); err != nil || string(call.Input) != `{"command":"toolu_early"}` {
		t.Fatalf("Call: %+v %v", call, err)
	}
	got := historyInputs(t, l)
	for _, id := range []string{"toolu_early", "toolu_late"} {
		if got[id] != `{"command":"`+id+`"}` {
			t.Errorf("history after a prune cut short: %s: %q (all: %v)", id, got[id], got)
		}
	}
	// Run again, the prune finishes, and History still has both.
	if _, err := l.Prune(ctx, cut, api.Incident{}, Unpublished); err != nil {
		t.Fatal(err)
	}
	got = historyInputs(t, l)
	if len(got) != 2 || got["toolu_early"] != `{"command":"toolu_early"}` {
		t.Errorf("history after the prune ran again: %v", got)
	}
}

// In a fleet a prune keeps the events not yet published, whatever their
// date, and removes the sessions that ended before the date with their
// calls. History gives the calls the ledger holds: not one whose record
// the prune removed, and a tool_use_id proposed again after its record was
// pruned once, with the input it has now.
func TestReviewHistoryAfterAFleetPrune(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	if _, _, err := l.StartSession(ctx, api.Session{ID: "old"}); err != nil {
		t.Fatal(err)
	}
	recordCall(t, l, "toolu_gone", "old")
	recordCall(t, l, "toolu_again", "old")
	if _, _, err := l.EndSession(ctx, "old", api.EndEnded); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Hour)
	head, _ := l.Head()
	// Postgres holds nothing yet: every event stays, the session goes.
	rec, err := l.Prune(ctx, c.Now(), api.Incident{}, 0)
	if err != nil || rec.Sessions != 1 || rec.BaseSeq != 0 {
		t.Fatalf("prune: %+v %v (head %d)", rec, err, head.Seq)
	}
	if _, err := l.Call(ctx, "toolu_gone"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a pruned call: %v", err)
	}
	if _, _, err := l.StartSession(ctx, api.Session{ID: "new"}); err != nil {
		t.Fatal(err)
	}
	again := api.Call{ToolUseID: "toolu_again", SessionID: "new", ToolName: "Bash", Input: json.RawMessage(`{"command":"other"}`)}
	if _, _, err := l.Record(ctx, again, api.Verdict{Effect: api.EffectAllow, Source: api.SourcePolicy}, true); err != nil {
		t.Fatal(err)
	}
	calls, err := l.Calls(ctx, CallQuery{})
	if err != nil || len(calls) != 1 {
		t.Fatalf("Calls: %+v %v", calls, err)
	}
	got := historyInputs(t, l)
	if len(got) != 1 || got["toolu_again"] != `{"command":"other"}` {
		t.Errorf("history: %v, want only toolu_again as proposed again", got)
	}
}
