package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
)

// clock is a settable clock for expiry tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newClock() *clock { return &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)} }

// openTest opens a real, durable ledger in a temporary directory.
func openTest(t testing.TB, c *clock) (*Ledger, string) {
	t.Helper()
	dir := t.TempDir()
	opts := Options{}
	if c != nil {
		opts.Now = c.Now
	}
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, dir
}

var ctx = context.Background()

func mustPropose(t testing.TB, l *Ledger, id, input string) api.Call {
	t.Helper()
	c, existed, err := l.Propose(ctx, api.Call{ToolUseID: id, SessionID: "s1", ToolName: "Bash", Input: json.RawMessage(input)})
	if err != nil || existed {
		t.Fatalf("propose %s: existed=%v err=%v", id, existed, err)
	}
	return c
}

func recordCall(t *testing.T, l *Ledger, id, session string) {
	t.Helper()
	call := api.Call{ToolUseID: id, SessionID: session, ToolName: "Bash", Input: json.RawMessage(`{"command":"` + id + `"}`)}
	if _, _, err := l.Record(ctx, call, api.Verdict{Effect: api.EffectAllow, Source: api.SourcePolicy}, true); err != nil {
		t.Fatal(err)
	}
}

func TestProposeOncePerID(t *testing.T) {
	l, _ := openTest(t, nil)
	first := mustPropose(t, l, "toolu_1", `{"command":"ls"}`)
	if first.InputSHA256 == "" || first.ProposedAt.IsZero() {
		t.Fatalf("call %+v", first)
	}
	// The same input, differently spaced: the same call.
	again, existed, err := l.Propose(ctx, api.Call{ToolUseID: "toolu_1", SessionID: "s1", ToolName: "Bash", Input: json.RawMessage(`{ "command": "ls" }`)})
	if err != nil || !existed || again.InputSHA256 != first.InputSHA256 {
		t.Fatalf("repeat: existed=%v err=%v", existed, err)
	}
	// Another input under the same id: a conflict, recorded in the audit.
	_, _, err = l.Propose(ctx, api.Call{ToolUseID: "toolu_1", SessionID: "s1", ToolName: "Bash", Input: json.RawMessage(`{"command":"rm -rf /"}`)})
	var conflict *ConflictError
	if !errors.As(err, &conflict) || conflict.Existing.InputSHA256 != first.InputSHA256 {
		t.Fatalf("conflict: %v", err)
	}
	if kinds := eventKinds(t, l); fmt.Sprint(kinds) != "[call_proposed call_conflict]" {
		t.Errorf("audit: %v", kinds)
	}
}

// A tool_use_id is one call in one directory: the same input proposed
// from another directory (where ./deploy.sh is another program) is a
// conflict; the prompt tool's proposal, which carries no directory, is not.
func TestProposeInAnotherDirectoryIsAConflict(t *testing.T) {
	l, _ := openTest(t, nil)
	call := api.Call{ToolUseID: "toolu_1", SessionID: "s1", ToolName: "Bash", Input: json.RawMessage(`{"command":"./deploy.sh"}`), Cwd: "/p/staging"}
	if _, existed, err := l.Propose(ctx, call); err != nil || existed {
		t.Fatalf("propose: existed=%v %v", existed, err)
	}
	again := call
	again.Cwd = ""
	if _, existed, err := l.Propose(ctx, again); err != nil || !existed {
		t.Errorf("the same call without a directory: existed=%v %v", existed, err)
	}
	// A hook's event always names its directory: one without is another
	// call's (a forged event's), as is one in another directory.
	if _, _, err := l.Record(ctx, again, api.Verdict{}, true); !IsConflict(err) {
		t.Errorf("a hook's proposal without the directory: %v, want a conflict", err)
	}
	again.Cwd = "/p/prod"
	_, _, err := l.Propose(ctx, again)
	var conflict *ConflictError
	if !errors.As(err, &conflict) || conflict.Existing.Cwd != "/p/staging" {
		t.Fatalf("the same input in another directory: %v", err)
	}
	if kinds := eventKinds(t, l); fmt.Sprint(kinds) != "[call_proposed call_conflict call_conflict]" {
		t.Errorf("audit: %v", kinds)
	}
}

func TestProposeRacersOnOneID(t *testing.T) {
	l, _ := openTest(t, nil)
	const n = 32
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, same, conflicts := 0, 0, 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			input := fmt.Sprintf(`{"command":"echo %d"}`, i%2)
			_, existed, err := l.Propose(ctx, api.Call{ToolUseID: "toolu_race", SessionID: "s1", ToolName: "Bash", Input: json.RawMessage(input)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case IsConflict(err):
				conflicts++
			case err != nil:
				t.Error(err)
			case existed:
				same++
			default:
				created++
			}
		}()
	}
	wg.Wait()
	if created != 1 || same+conflicts != n-1 || conflicts != n/2 {
		t.Errorf("created %d, same %d, conflicts %d; want exactly one creator and %d conflicts", created, same, conflicts, n/2)
	}
}

func TestDecisionIsTerminal(t *testing.T) {
	l, _ := openTest(t, nil)
	mustPropose(t, l, "toolu_1", `{}`)
	if _, err := l.Decide(ctx, "toolu_1", api.Verdict{Effect: api.EffectAsk, Source: "policy", ReasonCode: "default"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Decide(ctx, "toolu_1", api.Verdict{Effect: api.EffectDeny, Source: "policy", RuleID: "r", ReasonCode: "x"}); err != nil {
		t.Fatal(err)
	}
	_, err := l.Decide(ctx, "toolu_1", api.Verdict{Effect: api.EffectAllow, Source: "policy"})
	if !IsAlreadyDecided(err) {
		t.Fatalf("changing a terminal decision: %v", err)
	}
	c, _ := l.Call(ctx, "toolu_1")
	if c.Effect != api.EffectDeny || c.RuleID != "r" {
		t.Errorf("decision changed: %+v", c.Verdict)
	}
	if _, err := l.Decide(ctx, "toolu_unknown", api.Verdict{Effect: api.EffectDeny}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown call: %v", err)
	}
}

func TestExecutionOnce(t *testing.T) {
	l, _ := openTest(t, nil)
	mustPropose(t, l, "toolu_1", `{}`)
	c, err := l.RecordExecution(ctx, "toolu_1", Execution{Outcome: "ok"})
	if err != nil || c.ExecutedAt == nil || !c.Executed || c.Executions != 1 {
		t.Fatalf("first execution: %+v %v", c, err)
	}
	c, err = l.RecordExecution(ctx, "toolu_1", Execution{Outcome: "ok"})
	if !IsDuplicateExecution(err) || c.Executions != 2 {
		t.Fatalf("second execution: %+v %v", c, err)
	}
	if kinds := eventKinds(t, l); fmt.Sprint(kinds) != "[call_proposed call_executed execution_duplicate]" {
		t.Errorf("audit: %v", kinds)
	}
}

func TestWriteBackOnce(t *testing.T) {
	l, _ := openTest(t, nil)
	mustPropose(t, l, "toolu_1", `{}`)
	wb := api.WriteBack{ToolUseID: "toolu_1", Effect: api.EffectDeny, RuleID: "r", ReasonCode: "x", WroteBack: true}
	if got, err := l.RecordWriteBack(ctx, wb); err != nil || got != wb {
		t.Fatal(got, err)
	}
	if got, _ := l.RecordWriteBack(ctx, api.WriteBack{ToolUseID: "toolu_1", Effect: api.EffectAllow, WroteBack: true}); got != wb {
		t.Errorf("a second write-back replaced the first: %+v", got)
	}
	if got, err := l.WriteBackFor(ctx, "toolu_1"); err != nil || got != wb {
		t.Errorf("stored %+v %v", got, err)
	}
}

func eventKinds(t testing.TB, l *Ledger) []string {
	t.Helper()
	events := exported(t, l)
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	return kinds
}

func TestSessions(t *testing.T) {
	l, _ := openTest(t, nil)
	s, existed, err := l.StartSession(ctx, api.Session{ID: "s1", PolicySHA256: "abc", PolicyVersion: 2, ClaudePID: 42})
	if err != nil || existed || s.StartedAt.IsZero() {
		t.Fatal(s, existed, err)
	}
	if _, existed, _ := l.StartSession(ctx, api.Session{ID: "s1"}); !existed {
		t.Error("second start should find the session")
	}
	if _, err := l.UpdateSession(ctx, "s1", func(s *api.Session) { s.ClaudeSessionID = "c-1" }); err != nil {
		t.Fatal(err)
	}
	s, expired, err := l.EndSession(ctx, "s1", api.EndEnded)
	if err != nil || s.EndedAt == nil || s.EndReason != api.EndEnded || s.ClaudeSessionID != "c-1" || s.PolicyVersion != 2 || len(expired) != 0 {
		t.Fatalf("%+v %v %v", s, expired, err)
	}
	if again, _, _ := l.EndSession(ctx, "s1", api.EndAbandoned); !again.EndedAt.Equal(*s.EndedAt) || again.EndReason != api.EndEnded {
		t.Errorf("a second end changed the first: %+v", again)
	}
	if all, _ := l.Sessions(ctx); len(all) != 1 {
		t.Errorf("sessions: %v", all)
	}
}

func TestReopenKeepsEverythingAndTheChain(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustPropose(t, l, "toolu_1", `{"a":1}`)
	if _, err := Open(dir, Options{}); !IsLocked(err) {
		t.Errorf("a second open of a held ledger: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Propose(ctx, api.Call{ToolUseID: "x", SessionID: "s", ToolName: "T", Input: json.RawMessage(`{}`)}); !errors.Is(err, ErrClosed) {
		t.Errorf("propose after close: %v", err)
	}
	l, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if c, err := l.Call(ctx, "toolu_1"); err != nil || string(c.Input) != `{"a":1}` {
		t.Fatalf("after reopen: %+v %v", c, err)
	}
	mustPropose(t, l, "toolu_2", `{}`)
	res, err := l.Verify(ctx)
	if err != nil || res.Events != 2 {
		t.Fatalf("verify: %+v %v", res, err)
	}
}

func TestQueries(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	for i, s := range []string{"s1", "s2", "s1"} {
		if _, _, err := l.Propose(ctx, api.Call{ToolUseID: fmt.Sprintf("toolu_%d", i), SessionID: s, ToolName: "Read", Input: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		c.Add(time.Minute)
	}
	if calls, _ := l.Calls(ctx, CallQuery{SessionID: "s1"}); len(calls) != 2 || calls[0].ToolUseID != "toolu_0" || calls[1].ToolUseID != "toolu_2" {
		t.Errorf("by session: %v", calls)
	}
	start := newClock().Now()
	if calls, _ := l.Calls(ctx, CallQuery{From: start.Add(time.Minute), To: start.Add(2 * time.Minute)}); len(calls) != 1 || calls[0].ToolUseID != "toolu_1" {
		t.Errorf("by time: %v", calls)
	}
	if calls, _ := l.Calls(ctx, CallQuery{Limit: 2}); len(calls) != 2 {
		t.Errorf("limit: %v", calls)
	}
}

func TestStorePolicyKeepsTheBytes(t *testing.T) {
	l, _ := openTest(t, nil)
	doc := []byte("{\"version\": 1,\n  \"default\": \"ask\", \"rules\": []}\n")
	for range 2 {
		if err := l.StorePolicy(ctx, "sha-x", doc); err != nil {
			t.Fatal(err)
		}
	}
	got, err := l.Policy(ctx, "sha-x")
	if err != nil || string(got) != string(doc) {
		t.Fatalf("%q %v", got, err)
	}
	if kinds := eventKinds(t, l); fmt.Sprint(kinds) != "[policy_stored]" {
		t.Errorf("stored twice: %v", kinds)
	}
	if _, err := l.Policy(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing policy: %v", err)
	}
}

func TestRecordSeen(t *testing.T) {
	l, _ := openTest(t, nil)
	mustPropose(t, l, "toolu_1", `{}`)
	if err := l.RecordSeen(ctx, "toolu_1", "PreToolUse:Bash hook error: denied"); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordSeen(ctx, "toolu_unknown", "x"); err != nil {
		t.Fatal(err)
	}
	// A repeat's result does not replace what the first proposal showed.
	if err := l.RecordSeen(ctx, "toolu_1", "Denied (reason_code duplicate_tool_use_id)"); err != nil {
		t.Fatal(err)
	}
	if c, _ := l.Call(ctx, "toolu_1"); c.Seen != "PreToolUse:Bash hook error: denied" {
		t.Errorf("seen %q", c.Seen)
	}
	if kinds := eventKinds(t, l); fmt.Sprint(kinds) != "[call_proposed call_seen call_seen call_seen]" {
		t.Errorf("audit: %v", kinds)
	}
}

// exported is the audit chain as stored (read without exporting it, which
// would add an event).
func exported(t testing.TB, l *Ledger) []Event {
	t.Helper()
	var events []Event
	err := l.store.Scan(ctx, eventPrefix, eventPrefix, func(_, val []byte) error {
		var e Event
		err := json.Unmarshal(val, &e)
		events = append(events, e)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func TestRecordIsOneTransaction(t *testing.T) {
	l, _ := openTest(t, nil)
	p := api.Call{ToolUseID: "toolu_1", SessionID: "s1", ToolName: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}
	allow := api.Verdict{Effect: api.EffectAllow, RuleID: "r", Source: "policy"}
	c, fresh, err := l.Record(ctx, p, allow, true)
	if err != nil || !fresh || c.Effect != api.EffectAllow || c.DecidedAt == nil {
		t.Fatalf("%+v %v %v", c, fresh, err)
	}
	if wb, err := l.WriteBackFor(ctx, "toolu_1"); err != nil || wb.RuleID != "r" || !wb.WroteBack {
		t.Errorf("write-back %+v %v", wb, err)
	}
	// Proposed again, with another verdict: the recorded one stands.
	deny := api.Deny("x", "policy")
	if c, fresh, _ := l.Record(ctx, p, deny, true); fresh || c.Effect != api.EffectAllow {
		t.Errorf("again: %+v fresh=%v", c, fresh)
	}
	other := p
	other.Input = json.RawMessage(`{"command":"rm"}`)
	if _, _, err := l.Record(ctx, other, allow, true); !IsConflict(err) {
		t.Errorf("conflict: %v", err)
	}
	if kinds := eventKinds(t, l); fmt.Sprint(kinds) != "[call_proposed call_decided write_back call_conflict]" {
		t.Errorf("audit: %v", kinds)
	}
}

// A call proposed and never decided (the daemon died in between) takes the
// verdict of its next proposal; one that ran without a decision does not:
// it ran, and a second run must not be allowed.
func TestRecordDecidesOnlyWhatNeverRan(t *testing.T) {
	l, _ := openTest(t, nil)
	mustPropose(t, l, "toolu_1", `{}`)
	allow := api.Verdict{Effect: api.EffectAllow, Source: "policy"}
	p := api.Call{ToolUseID: "toolu_1", SessionID: "s1", ToolName: "Bash", Input: json.RawMessage(`{}`)}
	if c, fresh, err := l.Record(ctx, p, allow, false); err != nil || !fresh || c.Effect != api.EffectAllow {
		t.Fatalf("undecided: %+v %v %v", c, fresh, err)
	}
	mustPropose(t, l, "toolu_2", `{}`)
	if _, err := l.RecordExecution(ctx, "toolu_2", Execution{Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	p.ToolUseID = "toolu_2"
	if c, fresh, err := l.Record(ctx, p, allow, false); err != nil || fresh || c.Effect != "" {
		t.Errorf("ran undecided: %+v fresh=%v %v", c, fresh, err)
	}
}

// Calls recorded before the call record took the api shape read the same.
func TestDecodeCallOfTheEarlierShape(t *testing.T) {
	old := `{"tool_use_id":"t","session_id":"s","tool_name":"Bash","input":{},"input_sha256":"h","proposed_at":"2026-11-29T12:00:00Z",
	  "decided_at":"2026-11-29T12:00:01Z","failed_at":"2026-11-29T12:00:02Z","executions":1,
	  "decision":{"effect":"deny","rule_id":"r","reason_code":"x","source":"person","actor":"user:alex","approval_id":"apr_1","decided_at":"2026-11-29T12:00:01Z"}}`
	c, at, err := decodeCall([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if at != (refs{}) || string(c.Input) != "{}" {
		t.Errorf("its input: %s (at %d), want {} in the record", c.Input, at)
	}
	if c.Effect != api.EffectDeny || c.RuleID != "r" || c.Actor != "user:alex" || c.ApprovalID != "apr_1" || c.DecidedAt == nil ||
		!c.Executed || !c.Failed || c.ExecutedAt == nil {
		t.Errorf("%+v", c)
	}
}

// A call's input is stored once, in its call_proposed event, and what the
// model saw once, in its first call_seen event: the call's record, written
// over as the call is decided, run and seen, names those events, and every
// way of reading the call reads them there.
func TestInputIsStoredOnce(t *testing.T) {
	l, _ := openTest(t, nil)
	input := `{"command":"grep -rn needle-7f3a ./src","description":"search"}`
	p := api.Call{ToolUseID: "toolu_1", SessionID: "s1", ToolName: "Bash", Input: json.RawMessage(input)}
	if _, _, err := l.Record(ctx, p, api.Verdict{Effect: api.EffectAllow, Source: api.SourcePolicy}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RecordOutcomes(ctx, "s1", []api.Outcome{{ToolUseID: "toolu_1", Ran: true, Outcome: "ok", Seen: "3 matches of seen-c41d"}}); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordSeen(ctx, "toolu_1", "a later one, in the audit only"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RecordRepeat(ctx, "toolu_1", "s2", api.Verdict{Effect: api.EffectDeny, ReasonCode: "duplicate_tool_use_id"}); err != nil {
		t.Fatal(err)
	}
	raw, err := l.store.ReadRaw(callKey("toolu_1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, what := range []string{"needle-7f3a", "seen-c41d"} {
		if bytes.Contains(raw, []byte(what)) {
			t.Errorf("the call's record holds %s: %s", what, raw)
		}
		held := 0
		l.store.Scan(ctx, "", "", func(_, val []byte) error {
			held += bytes.Count(val, []byte(what))
			return nil
		})
		if held != 1 {
			t.Errorf("the ledger holds %s %d times, want once", what, held)
		}
	}
	const seen = "3 matches of seen-c41d"
	c, err := l.Call(ctx, "toolu_1")
	if err != nil || string(c.Input) != input || !c.Executed || c.Seen != seen || len(c.Repeats) != 1 {
		t.Fatalf("Call: %+v %v", c, err)
	}
	calls, err := l.Calls(ctx, CallQuery{})
	if err != nil || len(calls) != 1 || string(calls[0].Input) != input || calls[0].Seen != seen {
		t.Errorf("Calls: %+v %v", calls, err)
	}
	// RecordSeen, of a call seen first there.
	p.ToolUseID = "toolu_2"
	if _, _, err := l.Record(ctx, p, api.Verdict{Effect: api.EffectDeny, Source: api.SourcePolicy}, true); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordSeen(ctx, "toolu_2", "denied: seen-77b0"); err != nil {
		t.Fatal(err)
	}
	if raw, _ := l.store.ReadRaw(callKey("toolu_2")); bytes.Contains(raw, []byte("seen-77b0")) {
		t.Errorf("the call's record holds what the model saw: %s", raw)
	}
	if c, err := l.Call(ctx, "toolu_2"); err != nil || c.Seen != "denied: seen-77b0" {
		t.Errorf("Call after RecordSeen: %+v %v", c, err)
	}
	var history []api.Call
	if err := l.History(ctx, time.Time{}, time.Time{}, func(h api.HistoryItem) error {
		if h.Call != nil {
			history = append(history, *h.Call)
		}
		return nil
	}); err != nil || len(history) != 2 || string(history[0].Input) != input {
		t.Errorf("History: %+v %v", history, err)
	}
	a, _, err := l.CreateApproval(ctx, "toolu_1", ApprovalRequest{Timeout: time.Minute})
	if err != nil || string(a.Input) != input {
		t.Errorf("an approval of the call: %+v %v", a, err)
	}
}

// A ledger the previous code wrote (each record holds its input, values of
// 192 bytes or more S2-compressed), opened by this code: pruned (a prune
// cut short, then run again), compacted, reopened and written over, every
// call reads with its input, History gives each once, and the chain
// verifies.
func TestLedgerOfThePreviousCode(t *testing.T) {
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
