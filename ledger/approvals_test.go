package ledger

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
)

func ask(t testing.TB, l *Ledger, id string, timeout time.Duration) api.Approval {
	t.Helper()
	mustPropose(t, l, id, `{"command":"git push origin main"}`)
	a, existed, err := l.CreateApproval(ctx, id, ApprovalRequest{MatchedRule: "ask-push", PolicyVersion: 3, Timeout: timeout})
	if err != nil || existed {
		t.Fatalf("create approval: %v existed=%v", err, existed)
	}
	return a
}

func TestApprovalLifecycle(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	a := ask(t, l, "toolu_1", 15*time.Minute)
	if a.Status != api.StatusPending || !a.ExpiresAt.Equal(c.Now().Add(15*time.Minute)) || *a.MatchedRule != "ask-push" {
		t.Fatalf("record %+v", a)
	}
	// Asking again for the same call returns the same record.
	again, existed, err := l.CreateApproval(ctx, "toolu_1", ApprovalRequest{Timeout: time.Hour})
	if err != nil || !existed || again.ID != a.ID || !again.ExpiresAt.Equal(a.ExpiresAt) {
		t.Fatalf("second ask: %+v %v %v", again, existed, err)
	}
	if p, _ := l.Pending(ctx); len(p) != 1 || p[0].ID != a.ID {
		t.Fatalf("pending: %v", p)
	}
	got, d, err := l.Resolve(ctx, api.Decision{ApprovalID: a.ID, Decision: api.EffectAllow, Actor: "user:alice", ReasonCode: "ask-push"})
	if err != nil || got.Status != api.StatusApproved || d.Actor != "user:alice" || d.Decision != api.EffectAllow {
		t.Fatalf("approve: %+v %+v %v", got, d, err)
	}
	call, _ := l.Call(ctx, "toolu_1")
	if call.Effect != api.EffectAllow || call.Source != "person" || call.ApprovalID != a.ID || call.RuleID != "ask-push" {
		t.Errorf("call decision %+v", call.Verdict)
	}
	// Terminal: neither approve nor deny changes it.
	for _, status := range []api.Effect{api.EffectAllow, api.EffectDeny} {
		_, _, err := l.Resolve(ctx, api.Decision{ApprovalID: a.ID, Decision: status, Actor: "user:bob", ReasonCode: "x"})
		var te *TerminalError
		if !errors.As(err, &te) || te.Approval.Status != api.StatusApproved || te.Decision.Actor != "user:alice" {
			t.Errorf("%s after approve: %v", status, err)
		}
	}
	if p, _ := l.Pending(ctx); len(p) != 0 {
		t.Errorf("pending after approve: %v", p)
	}
	// The record was never overwritten by the decision: both exist.
	if stored, _ := l.DecisionFor(ctx, a.ID); stored != d {
		t.Errorf("decision document %+v", stored)
	}
	if _, _, err := l.Resolve(ctx, api.Decision{ApprovalID: "apr_nope", Decision: api.EffectAllow, Actor: "u", ReasonCode: "x"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
}

func TestLateApproveAfterExpiryIsRefused(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	a := ask(t, l, "toolu_1", 5*time.Second)
	c.Add(5 * time.Second) // exactly at expires_at: too late
	_, _, err := l.Resolve(ctx, api.Decision{ApprovalID: a.ID, Decision: api.EffectAllow, Actor: "user:alice", ReasonCode: "x"})
	var te *TerminalError
	if !errors.As(err, &te) || te.Approval.Status != api.StatusExpired || te.Decision.Actor != api.ActorExpiry ||
		te.Decision.ReasonCode != api.ReasonApprovalExpired {
		t.Fatalf("late approve: %v", err)
	}
	call, _ := l.Call(ctx, "toolu_1")
	if call.Effect != api.EffectDeny || call.ReasonCode != api.ReasonApprovalExpired || call.Source != "expiry" {
		t.Errorf("call decision %+v", call.Verdict)
	}
}

func TestExpireDue(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	short := ask(t, l, "toolu_1", time.Minute)
	ask(t, l, "toolu_2", time.Hour)
	shorter := ask(t, l, "toolu_3", 30*time.Second)
	c.Add(2 * time.Minute)
	expired, err := l.ExpireDue(ctx, c.Now())
	if err != nil || len(expired) != 2 {
		t.Fatalf("expired %v %v", expired, err)
	}
	if expired[0].Approval.ID != shorter.ID || expired[1].Approval.ID != short.ID {
		t.Errorf("expiry order: %v", expired)
	}
	for _, e := range expired {
		if e.Approval.Status != api.StatusExpired || e.Decision.Actor != api.ActorExpiry || e.Decision.ReasonCode != api.ReasonApprovalExpired {
			t.Errorf("expired %+v", e)
		}
	}
	if p, _ := l.Pending(ctx); len(p) != 1 || p[0].ToolUseID != "toolu_2" {
		t.Errorf("pending: %v", p)
	}
	if again, _ := l.ExpireDue(ctx, c.Now()); len(again) != 0 {
		t.Errorf("expired twice: %v", again)
	}
	for _, id := range []string{"toolu_1", "toolu_3"} {
		if a, err := l.ApprovalFor(ctx, id); err != nil || a.Status != api.StatusExpired {
			t.Errorf("%s: %+v %v", id, a, err)
		}
	}
}

// TestRacingDecisions has people approving and denying and the expiry
// running at once on the same records: each ends with exactly one terminal
// decision, the one the record shows.
func TestRacingDecisions(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	const n = 20
	var ids []string
	for i := range n {
		ids = append(ids, ask(t, l, fmt.Sprintf("toolu_%d", i), time.Minute).ID)
	}
	c.Add(time.Minute - time.Millisecond)
	var wg sync.WaitGroup
	wins := make([]int, n)
	var mu sync.Mutex
	for i, id := range ids {
		for r := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if r == 5 {
					c.Add(time.Millisecond / 4) // the expiry racing the people
					if _, err := l.ExpireDue(ctx, c.Now()); err != nil {
						t.Error(err)
					}
					return
				}
				status := api.EffectAllow
				if r%2 == 1 {
					status = api.EffectDeny
				}
				_, _, err := l.Resolve(ctx, api.Decision{ApprovalID: id, Decision: status, Actor: fmt.Sprintf("user:p%d", r), ReasonCode: "x"})
				if err == nil {
					mu.Lock()
					wins[i]++
					mu.Unlock()
				} else if !IsTerminal(err) {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	l.ExpireDue(ctx, c.Now().Add(time.Hour))
	decided := map[string]int{}
	for _, e := range exported(t, l) {
		if e.Kind == KindApprovalDecided {
			decided[e.Subject]++
		}
	}
	for i, id := range ids {
		a, _ := l.Approval(ctx, id)
		d, err := l.DecisionFor(ctx, id)
		want := map[string]api.Effect{api.StatusApproved: api.EffectAllow, api.StatusDenied: api.EffectDeny, api.StatusExpired: api.EffectDeny}[a.Status]
		if err != nil || d.Decision != want || decided[id] != 1 || wins[i] > 1 {
			t.Errorf("%s: status %s, decision %+v, %d decided events, %d winning people", id, a.Status, d, decided[id], wins[i])
		}
		if (a.Status == api.StatusExpired) != (wins[i] == 0) {
			t.Errorf("%s: status %s but %d people won", id, a.Status, wins[i])
		}
	}
}

// A hand-off approval (an installed hook's PermissionRequest) that nobody
// decides leaves the call to Claude Code's dialog: the record expires, the
// decision says handed_to_claude, and the call is still an ask, not a
// deny. An early HandOff does the same before its time; neither changes a
// terminal record.
func TestHandOffApprovals(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	mustPropose(t, l, "toolu_h1", `{"command":"touch x"}`)
	mustPropose(t, l, "toolu_h2", `{"command":"touch y"}`)
	for _, id := range []string{"toolu_h1", "toolu_h2"} {
		if _, err := l.Decide(ctx, id, api.Verdict{Effect: api.EffectAsk, RuleID: "ask-touch", ReasonCode: "needs_review", Source: "policy"}); err != nil {
			t.Fatal(err)
		}
	}
	timed, _, _ := l.CreateApproval(ctx, "toolu_h1", ApprovalRequest{MatchedRule: "ask-touch", Timeout: time.Minute, HandOff: true})
	early, _, _ := l.CreateApproval(ctx, "toolu_h2", ApprovalRequest{MatchedRule: "ask-touch", Timeout: time.Minute, HandOff: true})

	a, d, err := l.HandOff(ctx, early.ID, api.ActorHookGone)
	if err != nil || a.Status != api.StatusExpired || d.ReasonCode != api.ReasonHandedToClaude || d.Actor != "system:hook_gone" {
		t.Fatalf("early hand-off: %+v %+v %v", a, d, err)
	}
	c.Add(time.Minute)
	expired, err := l.ExpireDue(ctx, c.Now())
	if err != nil || len(expired) != 1 || expired[0].Approval.ID != timed.ID || expired[0].Decision.ReasonCode != api.ReasonHandedToClaude {
		t.Fatalf("expiry of a hand-off approval: %+v %v", expired, err)
	}
	for _, id := range []string{"toolu_h1", "toolu_h2"} {
		call, _ := l.Call(ctx, id)
		if d := call.Verdict; d.Effect != api.EffectAsk || d.ReasonCode != api.ReasonHandedToClaude || d.Source != api.SourceClaude || d.RuleID != "ask-touch" {
			t.Errorf("%s: call decision %+v, want an ask left to Claude Code", id, d)
		}
		if wb, err := l.WriteBackFor(ctx, id); err != nil || wb.WroteBack || wb.ReasonCode != api.ReasonHandedToClaude {
			t.Errorf("%s: write-back %+v %v, want nothing written back", id, wb, err)
		}
	}
	// Terminal stays terminal: neither a person nor a second hand-off.
	if _, _, err := l.HandOff(ctx, early.ID, api.ActorHookGone); !IsTerminal(err) {
		t.Errorf("a second hand-off: %v", err)
	}
	if _, _, err := l.Resolve(ctx, api.Decision{ApprovalID: timed.ID, Decision: api.EffectAllow, Actor: "user:alice", ReasonCode: "x"}); !IsTerminal(err) {
		t.Errorf("approve after the hand-off: %v", err)
	}
	// Only hand-off approvals can be handed off.
	plain := ask(t, l, "toolu_plain", time.Minute)
	if _, _, err := l.HandOff(ctx, plain.ID, api.ActorHookGone); err == nil {
		t.Error("a plain approval was handed off")
	}
	if got, _ := l.Approval(ctx, plain.ID); got.Status != api.StatusPending {
		t.Errorf("the plain approval: %+v", got)
	}
	if _, err := l.Verify(ctx); err != nil {
		t.Errorf("verify: %v", err)
	}
}

// Ending a session settles its pending approvals (and only its own): a
// call of a session that is over can never be approved.
func TestEndSessionSettlesItsApprovals(t *testing.T) {
	l, _ := openTest(t, nil)
	for _, s := range []string{"s1", "s2"} {
		if _, _, err := l.StartSession(ctx, api.Session{ID: s}); err != nil {
			t.Fatal(err)
		}
	}
	mine := ask(t, l, "toolu_1", time.Hour) // session s1 (mustPropose)
	if _, _, err := l.Propose(ctx, api.Call{ToolUseID: "toolu_2", SessionID: "s2", ToolName: "Bash", Input: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	other, _, err := l.CreateApproval(ctx, "toolu_2", ApprovalRequest{Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	_, expired, err := l.EndSession(ctx, "s1", api.EndAbandoned)
	if err != nil || len(expired) != 1 || expired[0].Approval.ID != mine.ID || expired[0].Decision.ReasonCode != api.ReasonApprovalExpired {
		t.Fatalf("expired %+v %v", expired, err)
	}
	if _, _, err := l.Resolve(ctx, api.Decision{ApprovalID: mine.ID, Decision: api.EffectAllow, Actor: "user:x", ReasonCode: "r"}); !IsTerminal(err) {
		t.Errorf("approving a call of an ended session: %v", err)
	}
	if a, _ := l.Approval(ctx, other.ID); a.Status != api.StatusPending {
		t.Errorf("another session's approval was settled: %+v", a)
	}
}

// A session whose run was stopped withdraws what still waits for a
// person: a deny approval_withdrawn by system:withdrawn, from the gate
// (no time ran out), and nobody can approve it after; a session that
// deferred its call stays deferred, stopped or not.
func TestInterruptedSessionWithdrawsItsApprovals(t *testing.T) {
	l, _ := openTest(t, nil)
	for _, s := range []string{"s1", "s2"} {
		if _, _, err := l.StartSession(ctx, api.Session{ID: s}); err != nil {
			t.Fatal(err)
		}
	}
	mine := ask(t, l, "toolu_1", time.Hour) // session s1
	_, withdrawn, err := l.EndSession(ctx, "s1", api.EndInterrupted)
	if err != nil || len(withdrawn) != 1 || withdrawn[0].Approval.ID != mine.ID {
		t.Fatalf("withdrawn %+v %v", withdrawn, err)
	}
	if d := withdrawn[0].Decision; d.ReasonCode != api.ReasonApprovalWithdrawn || d.Actor != api.ActorWithdrawn || d.Decision != api.EffectDeny {
		t.Errorf("the decision: %+v", d)
	}
	if c, _ := l.Call(ctx, "toolu_1"); c.Effect != api.EffectDeny || c.ReasonCode != api.ReasonApprovalWithdrawn || c.Source != api.SourceGate {
		t.Errorf("the call: %+v", c)
	}
	if _, _, err := l.Resolve(ctx, api.Decision{ApprovalID: mine.ID, Decision: api.EffectAllow, Actor: "user:x", ReasonCode: "r"}); !IsTerminal(err) {
		t.Errorf("approving a withdrawn ask: %v", err)
	}
	// s2 deferred its ask: stopping its run leaves it for the person.
	if _, _, err := l.Propose(ctx, api.Call{ToolUseID: "toolu_2", SessionID: "s2", ToolName: "Bash", Input: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	deferred, _, err := l.CreateApproval(ctx, "toolu_2", ApprovalRequest{Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := l.Defer(ctx, "s2", "toolu_2", "claude-sid"); !ok || err != nil {
		t.Fatalf("defer: %v %v", ok, err)
	}
	if s, settled, err := l.EndSession(ctx, "s2", api.EndInterrupted); err != nil || s.EndReason != api.EndDeferred || len(settled) != 0 {
		t.Errorf("a deferred session stopped: %+v %v %v, want it deferred", s, settled, err)
	}
	if a, _ := l.Approval(ctx, deferred.ID); a.Status != api.StatusPending {
		t.Errorf("the deferred approval was settled: %+v", a)
	}
}

// A deferred session ends without settling the approval it waits on, and
// is taken up again once: a second resume, concurrent or later, is refused.
func TestDeferredSessionResumesOnce(t *testing.T) {
	l, _ := openTest(t, nil)
	if _, _, err := l.StartSession(ctx, api.Session{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	a := ask(t, l, "toolu_1", time.Hour)
	if ok, err := l.Defer(ctx, "s1", "toolu_1", "claude-sid"); !ok || err != nil {
		t.Fatalf("defer: %v %v", ok, err)
	}
	mustPropose(t, l, "toolu_2", `{"command":"git push"}`)
	if ok, err := l.Defer(ctx, "s1", "toolu_2", "claude-sid"); ok || err != nil {
		t.Errorf("a second deferral in the session: %v %v", ok, err)
	}
	s, expired, err := l.EndSession(ctx, "s1", api.EndEnded)
	if err != nil || s.EndReason != api.EndDeferred || s.DeferredCall != "toolu_1" || s.ClaudeSessionID != "claude-sid" || len(expired) != 0 {
		t.Fatalf("end: %+v %v %v", s, expired, err)
	}
	if got, _ := l.Approval(ctx, a.ID); got.Status != api.StatusPending {
		t.Errorf("the deferred approval was settled: %+v", got)
	}
	if c, _ := l.Call(ctx, "toolu_1"); !c.Deferred || c.ApprovalID != a.ID || c.ExpiresAt == nil {
		t.Errorf("the deferred call: %+v", c)
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := l.ResumeSession(ctx, "s1", func(*api.Session) {})
			errs <- err
		}()
	}
	first, second := <-errs, <-errs
	if (first == nil) == (second == nil) || !errors.Is(cmp.Or(first, second), ErrNotDeferred) {
		t.Errorf("two resumes: %v, %v; want one to succeed and one ErrNotDeferred", first, second)
	}
	if s, _ := l.Session(ctx, "s1"); s.EndedAt != nil || s.DeferredCall != "" || s.ResumedAt == nil {
		t.Errorf("the resumed session: %+v", s)
	}
}
