package daemon

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
)

// stranger is a live process that is not this test's ancestor: it stands
// in for the supervisor of a session, so that this test process may
// approve that session's calls.
func stranger(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

func registerAs(t *testing.T, c *client.Client, supervisorPID int, timeout time.Duration, onAsk string) string {
	t.Helper()
	s, err := c.Register(ctx, api.RegisterRequest{Policy: json.RawMessage(`{"version":1,"default":"ask","rules":[
		{"id":"ask-push","effect":"ask","tool":"Bash","input":{"command":{"command":[["git","push"]]}},"reason_code":"publishes"}]}`),
		PolicyName: "p.json", Cwd: "/p", SupervisorPID: supervisorPID, ApprovalTimeout: api.Duration(timeout), OnAsk: onAsk})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

func askFor(t *testing.T, c *client.Client, sid, id, command string) api.Verdict {
	t.Helper()
	input := json.RawMessage(`{"command":"` + command + `"}`)
	if _, err := c.Hook(ctx, api.HookRequest{SessionID: sid, Event: pre(id, "Bash", string(input))}); err != nil {
		t.Fatal(err)
	}
	v, err := c.Prompt(ctx, api.PromptRequest{SessionID: sid, ToolName: "Bash", ToolUseID: id, Input: input})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestApproveAndDeny(t *testing.T) {
	p := testPaths(t)
	c := startDaemonInProcess(t, p)
	approver := client.NewClient(p.ApproveSocket())
	sid := registerAs(t, c, stranger(t), time.Hour, "wait")
	watch, err := approver.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	if ev, err := watch.Next(); err != nil || ev.Type != api.EventSnapshot {
		t.Fatalf("first event %+v %v", ev, err)
	}

	v := askFor(t, c, sid, "t1", "git push origin main")
	if v.Effect != "ask" || v.RuleID != "ask-push" {
		t.Fatalf("ask: %+v", v)
	}
	if ev, _ := watch.Next(); ev.Type != api.EventRequested || ev.Approval.Approval.ID != v.ApprovalID || ev.Approval.ReasonCode != "publishes" {
		t.Errorf("requested event %+v", ev)
	}
	waited := make(chan api.Verdict, 1)
	go func() { w, _ := c.Wait(ctx, v.ApprovalID); waited <- w }()
	d, err := approver.Decide(ctx, v.ApprovalID, api.DecideRequest{Decision: "approve", Reason: "looks fine"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Decision == nil || d.Decision.Actor != "user:root" && !strings.HasPrefix(d.Decision.Actor, "user:") || d.Decision.ActorPID != os.Getpid() {
		t.Errorf("decision %+v", d.Decision)
	}
	got := <-waited
	if got.Effect != "allow" || string(got.UpdatedInput) != `{"command":"git push origin main"}` || got.Source != "person" {
		t.Errorf("the waiting call got %+v", got)
	}
	if ev, _ := watch.Next(); ev.Type != api.EventDecided || ev.Approval.Decision.Decision != api.EffectAllow {
		t.Errorf("decided event %+v", ev)
	}
	// A terminal approval never changes.
	if _, err := approver.Decide(ctx, v.ApprovalID, api.DecideRequest{Decision: "deny"}); errorCode(err) != "already_decided" {
		t.Errorf("deciding twice: %v", err)
	}

	v = askFor(t, c, sid, "t2", "git push --force")
	// The refusal changed nothing, so it told nobody: the next event is
	// the next ask.
	if ev, _ := watch.Next(); ev.Type != api.EventRequested || ev.Approval.Approval.ID != v.ApprovalID {
		t.Errorf("after a refused decision, the next event is %s of %+v", ev.Type, ev.Approval)
	}
	if _, err := approver.Decide(ctx, v.ApprovalID, api.DecideRequest{Decision: "deny", Reason: "secret note"}); err != nil {
		t.Fatal(err)
	}
	got, err = c.Wait(ctx, v.ApprovalID)
	if err != nil || got.Effect != "deny" || got.ReasonCode != "publishes" || strings.Contains(got.Message, "secret note") {
		t.Errorf("denied: %+v %v", got, err)
	}
	// An unknown id is named in the domain's words, never by the ledger's
	// internal key ("a/apr_..."), which approvers would print.
	for _, id := range []string{"apr_01XXXXXXXXXXXXXXXXXXXXXXXX", "apr_nope"} {
		_, err := approver.Decide(ctx, id, api.DecideRequest{Decision: "approve"})
		if errorCode(err) != "not_found" || err.Error() != "no approval "+id+": not found" {
			t.Errorf("unknown id: %v", err)
		}
		if _, err := approver.Approval(ctx, id); err == nil || strings.Contains(err.Error(), "a/") {
			t.Errorf("show an unknown id: %v", err)
		}
	}
}

func TestExpiryDeniesAndLateApproveIsRefused(t *testing.T) {
	p := testPaths(t)
	c := startDaemonInProcess(t, p)
	approver := client.NewClient(p.ApproveSocket())
	sid := registerAs(t, c, stranger(t), 300*time.Millisecond, "wait")
	v := askFor(t, c, sid, "t1", "git push")
	got, err := c.Wait(ctx, v.ApprovalID) // the daemon's timer decides: nobody answers
	if err != nil || got.Effect != "deny" || got.ReasonCode != "approval_expired" || got.Source != "expiry" {
		t.Fatalf("expiry: %+v %v", got, err)
	}
	_, err = approver.Decide(ctx, v.ApprovalID, api.DecideRequest{Decision: "approve"})
	if errorCode(err) != "expired" || !strings.Contains(err.Error(), "expired") {
		t.Errorf("late approve: %v", err)
	}
}

func TestSelfApprovalIsRefused(t *testing.T) {
	p := testPaths(t)
	c := startDaemonInProcess(t, p)
	approver := client.NewClient(p.ApproveSocket())
	// This test process is the session's supervisor: it, and anything it
	// starts, is inside the session.
	sid := registerAs(t, c, os.Getpid(), time.Hour, "wait")
	v := askFor(t, c, sid, "t1", "git push")
	if _, err := approver.Decide(ctx, v.ApprovalID, api.DecideRequest{Decision: "approve"}); errorCode(err) != "self_approval" {
		t.Fatalf("the supervisor itself: %v", err)
	}
	// A grandchild, through a shell, is refused as well.
	out, _ := exec.Command("sh", "-c", "sh -c 'curl -s --unix-socket "+p.ApproveSocket()+
		" -H \""+api.HeaderProtocol+": "+strconv.Itoa(api.ProtocolVersion)+"\" -X POST -d {\\\"decision\\\":\\\"approve\\\"} http://toolgate/v1/approvals/"+v.ApprovalID+"/decide'").Output()
	if !strings.Contains(string(out), "self_approval") {
		t.Errorf("a descendant got %s", out)
	}
	d, _ := client.NewClient(p.ApproveSocket()).Approval(ctx, v.ApprovalID)
	if d.Approval.Status != "pending" {
		t.Errorf("the approval changed: %+v", d.Approval)
	}
}

func TestOnAskDenyAndQueueCap(t *testing.T) {
	p := testPaths(t)
	c := startDaemonInProcess(t, p)
	sid := registerAs(t, c, stranger(t), time.Hour, "deny")
	if v := askFor(t, c, sid, "t1", "git push"); v.Effect != "deny" || v.ReasonCode != "no_approver" {
		t.Errorf("--on-ask deny: %+v", v)
	}
	sid = registerAs(t, c, stranger(t), time.Hour, "wait")
	for i := range PendingCap {
		if v := askFor(t, c, sid, "q"+strconv.Itoa(i), "git push"); v.Effect != "ask" {
			t.Fatalf("ask %d: %+v", i, v)
		}
	}
	if v := askFor(t, c, sid, "q-over", "git push"); v.Effect != "deny" || v.ReasonCode != "queue_full" {
		t.Errorf("over the cap: %+v", v)
	}
}
