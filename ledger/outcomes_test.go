package ledger

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/toolgate/toolgate/api"
)

// What toolgate run reads of a session's transcript is recorded in one
// transaction: executions once, what the model saw, and calls that ran
// without ever being proposed.
func TestRecordOutcomes(t *testing.T) {
	l, _ := openTest(t, nil)
	mustPropose(t, l, "toolu_ran", `{}`)
	mustPropose(t, l, "toolu_denied", `{}`)
	results, err := l.RecordOutcomes(ctx, "s", []api.Outcome{
		{ToolUseID: "toolu_ran", Ran: true, Outcome: "ok", Seen: "output"},
		{ToolUseID: "toolu_denied", Seen: "denied by rule x"},
		{ToolUseID: "toolu_ran", Seen: "Denied (reason_code duplicate_tool_use_id)"}, // the same id again, refused
		{ToolUseID: "toolu_ghost", ToolName: "Read", Input: json.RawMessage(`{"file_path":"a"}`), Ran: true, Failed: true, Outcome: "no such file", Seen: "no such file"},
		{ToolUseID: "toolu_unknown", Seen: "something"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(results) != "[{toolu_ran false false false} {toolu_denied false false false} {toolu_ran false false false} {toolu_ghost true false false} {toolu_unknown false false false}]" {
		t.Errorf("results %v", results)
	}
	ran, _ := l.Call(ctx, "toolu_ran")
	// It keeps what its run showed the model: the repeat's denial is in the
	// audit only (RecordSeen's rule).
	if !ran.Executed || ran.Executions != 1 || ran.Failed || ran.Seen != "output" {
		t.Errorf("the call that ran: %+v", ran)
	}
	if denied, _ := l.Call(ctx, "toolu_denied"); denied.Executed || denied.Seen != "denied by rule x" {
		t.Errorf("the denied call: %+v", denied)
	}
	ghost, err := l.Call(ctx, "toolu_ghost")
	if err != nil || !ghost.Executed || !ghost.Failed || ghost.Effect != "" || ghost.SessionID != "s" || ghost.ToolName != "Read" {
		t.Errorf("a call that ran undecided: %+v %v", ghost, err)
	}
	if _, err := l.Call(ctx, "toolu_unknown"); err == nil {
		t.Error("a result without a call to record made one")
	}
	// A second run of an id is a duplicate.
	results, err = l.RecordOutcomes(ctx, "s", []api.Outcome{{ToolUseID: "toolu_ran", Ran: true, Seen: "again"}})
	if err != nil || !results[0].Duplicate {
		t.Errorf("a second execution: %v %v", results, err)
	}
	want := "[call_proposed call_proposed call_executed call_seen call_seen call_seen call_proposed call_failed call_seen call_seen execution_duplicate call_seen]"
	if kinds := eventKinds(t, l); fmt.Sprint(kinds) != want {
		t.Errorf("audit:\n got %v\nwant %s", kinds, want)
	}
	if _, err := l.Verify(ctx); err != nil {
		t.Error(err)
	}
	if _, err := l.RecordOutcomes(ctx, "s", []api.Outcome{{Seen: "x"}}); err == nil {
		t.Error("an outcome without a tool_use_id was accepted")
	}
}

// An outcome sent again (run's request reached the daemon, its answer did
// not) is recorded once: a retry is not a second execution. Another entry
// of the transcript saying the call ran is one.
func TestOutcomeSentAgain(t *testing.T) {
	l, _ := openTest(t, nil)
	mustPropose(t, l, "toolu_1", `{}`)
	sent := []api.Outcome{{ToolUseID: "toolu_1", Ran: true, Outcome: "ok", Seen: "output", Entry: "e-1"}}
	for range 2 {
		if results, err := l.RecordOutcomes(ctx, "s", sent); err != nil || results[0].Duplicate {
			t.Fatalf("%v %v", results, err)
		}
	}
	if c, _ := l.Call(ctx, "toolu_1"); c.Executions != 1 || fmt.Sprint(c.TranscriptEntries) != "[e-1]" {
		t.Errorf("after a retry: %+v", c)
	}
	want := "[call_proposed call_executed call_seen]"
	if kinds := eventKinds(t, l); fmt.Sprint(kinds) != want {
		t.Errorf("audit:\n got %v\nwant %s", kinds, want)
	}
	results, err := l.RecordOutcomes(ctx, "s", []api.Outcome{{ToolUseID: "toolu_1", Ran: true, Seen: "again", Entry: "e-2"}})
	if err != nil || !results[0].Duplicate {
		t.Errorf("another entry saying it ran: %v %v", results, err)
	}
}
