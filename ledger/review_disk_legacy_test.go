package ledger

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
)

// A ledger the previous code wrote (each record holds its input, values of
// 192 bytes or more S2-compressed), opened by this code: pruned (a prune
// cut short, then run again), compacted, reopened and written over, every
// call reads with its input, History gives each once, and the chain
// verifies.
func TestReviewLedgerOfThePreviousCode(t *testing.T) {
	c := newClock()
	l, dir := openTest(t, c)
	if _, _, err := l.StartSession(ctx, api.Session{ID: "long"}); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("make test ", 40) // compressed as stored
	input := func(id string) string { return `{"command":"` + id + " " + big + `"}` }
	// As the previous code recorded a call: the record is the event's data.
	legacy := func(id string) {
		_, err := write(ctx, l, func(t *tx) (struct{}, error) {
			call := api.Call{ToolUseID: id, SessionID: "long", ToolName: "Bash", Input: json.RawMessage(input(id)), InputSHA256: InputSHA256("Bash", []byte(input(id))), ProposedAt: t.Now()}
			raw, _ := json.Marshal(call)
			if err := t.Set(callKey(id), raw); err != nil {
				return struct{}{}, err
			}
			if err := t.Set(sessionCallKey("long", id), nil); err != nil {
				return struct{}{}, err
			}
			return struct{}{}, t.event(KindCallProposed, id, marshaled(raw))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	legacy("toolu_old_1")
	legacy("toolu_old_2")
	if _, err := l.Decide(ctx, "toolu_old_1", api.Verdict{Effect: api.EffectAllow, Source: api.SourcePolicy}); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Hour)
	cut := c.Now()
	legacy("toolu_old_3")
	c.Add(time.Hour)
	recordNew := api.Call{ToolUseID: "toolu_new", SessionID: "long", ToolName: "Bash", Input: json.RawMessage(input("toolu_new"))}
	if _, _, err := l.Record(ctx, recordNew, api.Verdict{}, false); err != nil {
		t.Fatal(err)
	}
	ids := []string{"toolu_old_1", "toolu_old_2", "toolu_old_3", "toolu_new"}
	check := func(when string) {
		t.Helper()
		for _, id := range ids {
			call, err := l.Call(ctx, id)
			if err != nil || string(call.Input) != input(id) {
				t.Errorf("%s: %s: %.40q %v", when, id, call.Input, err)
			}
		}
		calls, err := l.Calls(ctx, CallQuery{})
		if err != nil || len(calls) != len(ids) {
			t.Errorf("%s: Calls: %d %v", when, len(calls), err)
		}
		got := historyInputs(t, l)
		for _, id := range ids {
			if got[id] != input(id) {
				t.Errorf("%s: history: %s: %.40q", when, id, got[id])
			}
		}
		if len(got) != len(ids) {
			t.Errorf("%s: history gave %d calls", when, len(got))
		}
		if res, err := l.Verify(ctx); err != nil || !res.Valid {
			t.Errorf("%s: verify: %+v %v", when, res, err)
		}
	}
	check("as written")
	startPrune(t, l, cut)
	check("a prune cut short")
	if _, err := l.Prune(ctx, cut, api.Incident{}, Unpublished); err != nil {
		t.Fatal(err)
	}
	check("pruned")
	if _, err := l.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	check("compacted")
	l.Close()
	var err error
	if l, err = Open(dir, Options{Now: c.Now}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for _, id := range ids {
		if _, err := l.RecordExecution(ctx, id, Execution{Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	check("reopened and written over")
	c.Add(time.Hour)
	if _, err := l.Prune(ctx, c.Now(), api.Incident{}, Unpublished); err != nil {
		t.Fatal(err)
	}
	check("pruned again")
}
