package ledger

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
)

// A call read (its record) just before a prune removed it with its
// session, and then its call_proposed event: reading its input then
// finds neither. That is a call not found, said in the domain's words,
// not the store's key; and Calls, listing while a prune runs, leaves
// the call out instead of failing.
func TestReviewCallPrunedWhileRead(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	if _, _, err := l.StartSession(ctx, api.Session{ID: "old"}); err != nil {
		t.Fatal(err)
	}
	recordCall(t, l, "toolu_old", "old")
	if _, _, err := l.EndSession(ctx, "old", api.EndEnded); err != nil {
		t.Fatal(err)
	}
	raw, err := l.store.ReadRaw(callKey("toolu_old")) // as Calls' scan read it
	if err != nil {
		t.Fatal(err)
	}
	c.Add(time.Hour)
	if _, err := l.Prune(ctx, c.Now(), api.Incident{}, Unpublished); err != nil {
		t.Fatal(err)
	}
	_, err = l.decodeCall(raw)
	if !errors.Is(err, ErrNotFound) || strings.Contains(err.Error(), "c/") {
		t.Errorf("reading a call pruned meanwhile: %v", err)
	}
}

// A call repeated from another session (RecordRepeat lists it among that
// session's calls) is pruned with its own session: the other session's
// calls still list, without it.
func TestReviewCallsOfASessionThatRepeatedAPrunedCall(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	for _, id := range []string{"s1", "s2"} {
		if _, _, err := l.StartSession(ctx, api.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	recordCall(t, l, "toolu_x", "s1")
	recordCall(t, l, "toolu_y", "s2")
	if _, err := l.RecordRepeat(ctx, "toolu_x", "s2", api.Verdict{Effect: api.EffectDeny, ReasonCode: "duplicate_tool_use_id"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.EndSession(ctx, "s1", api.EndEnded); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Hour)
	if _, err := l.Prune(ctx, c.Now(), api.Incident{}, Unpublished); err != nil {
		t.Fatal(err)
	}
	calls, err := l.Calls(ctx, CallQuery{SessionID: "s2"})
	if err != nil || len(calls) != 1 || calls[0].ToolUseID != "toolu_y" {
		t.Errorf("s2's calls: %+v %v", calls, err)
	}
}
