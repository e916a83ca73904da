package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/internal/proc"
)

// installedEvent is a hook event of Claude Code's session sid.
func installedEvent(sid, name, tool, input, toolUseID string) []byte {
	ev := fmt.Sprintf(`{"session_id":%q,"cwd":"/project","hook_event_name":%q,"tool_name":%q,"tool_input":%s`, sid, name, tool, input)
	if toolUseID != "" {
		ev += fmt.Sprintf(`,"tool_use_id":%q`, toolUseID)
	}
	return []byte(ev + "}")
}

func writePolicy(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(path, []byte(`{"version":4,"default":"allow","rules":[
		{"id":"ask-push","effect":"ask","tool":"Bash","input":{"command":{"command":[["git","push"]]}},"reason_code":"publishes"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The claude of an installed session is the pid its hook claims only when
// that is an ancestor of the hook: a claim of any other process is not
// believed, so it cannot be used to make a stranger "the session".
func TestInstalledSessionClaudePID(t *testing.T) {
	c := startDaemonInProcess(t, testPaths(t))
	policy := writePolicy(t)
	grandparent, ok := proc.Parent(os.Getppid())
	if !ok {
		t.Fatal("no grandparent")
	}
	for _, tt := range []struct {
		name    string
		claimed int
		want    int
	}{
		{"an ancestor", grandparent, grandparent},
		{"a stranger", stranger(t), os.Getppid()}, // the hook's parent instead (this test is the hook)
		{"nothing", 0, os.Getppid()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sid := "cc-" + strings.ReplaceAll(tt.name, " ", "-")
			in := &api.InstalledHook{PolicyPath: policy, ApprovalTimeout: api.Duration(time.Minute), ClaudePID: tt.claimed}
			resp, err := c.Hook(ctx, api.HookRequest{Event: installedEvent(sid, "PreToolUse", "Bash", `{"command":"ls"}`, "t-"+sid), Installed: in})
			if err != nil || resp.Verdict == nil || resp.Verdict.Effect != "allow" {
				t.Fatalf("PreToolUse: %+v %v", resp, err)
			}
			s, err := c.Session(ctx, sid)
			if err != nil || s.ClaudeSessionID != sid || s.PolicyVersion != 4 {
				t.Fatalf("session: %+v %v", s, err)
			}
			if s.ClaudePID != tt.want {
				t.Errorf("claude pid %d, want %d", s.ClaudePID, tt.want)
			}
		})
	}
	// A toolgate run session cannot be taken over by an installed hook.
	runSID := register(t, c)
	_, err := c.Hook(ctx, api.HookRequest{Event: installedEvent(runSID, "PreToolUse", "Bash", `{"command":"ls"}`, "t-run"),
		Installed: &api.InstalledHook{PolicyPath: policy, ApprovalTimeout: api.Duration(time.Minute)}})
	if errorCode(err) != "bad_event" {
		t.Errorf("an installed hook naming a run session: %v", err)
	}
}

// The PermissionRequest path with the real hook binary, spawned the way
// Claude Code spawns it (sh -c; the shell stands in for claude, so that
// this test, its parent, may approve): the approval is
// created for the right call and waits; approve answers allow with the
// input; a hook killed while it waits hands its approval to Claude Code's
// dialog at once.
func TestInstalledPermissionRequest(t *testing.T) {
	p := testPaths(t)
	c := startDaemonInProcess(t, p)
	hook := buildHook(t)
	policy := writePolicy(t)
	approver := client.NewClient(p.ApproveSocket())
	run := func(event []byte) *exec.Cmd {
		cmd := exec.Command("sh", "-c", `CLAUDE_PID=$$ "$0" --policy "$1" --approval-timeout 1m`, hook, policy)
		cmd.Stdin = bytes.NewReader(event)
		cmd.Env = append(hookEnv(), "TOOLGATE_RUNTIME_DIR="+p.RuntimeDir)
		cmd.Env = append(cmd.Env[:len(cmd.Env):len(cmd.Env)], "TOOLGATE_SESSION=")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // so that the hook and its shell die together
		return cmd
	}
	push := `{"command":"git push origin main"}`
	for _, id := range []string{"toolu_p1", "toolu_p2"} {
		out, err := run(installedEvent("cc-perm", "PreToolUse", "Bash", push, id)).Output()
		if err != nil || gjson.GetBytes(out, "hookSpecificOutput.permissionDecision").String() != "ask" {
			t.Fatalf("PreToolUse %s: %s %v", id, out, err)
		}
	}
	// Two identical asks: each PermissionRequest gets its own call.
	first := run(installedEvent("cc-perm", "PermissionRequest", "Bash", push, ""))
	var firstOut bytes.Buffer
	first.Stdout = &firstOut
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	a1 := waitPending(t, approver, 1)[0]
	second := run(installedEvent("cc-perm", "PermissionRequest", "Bash", push, ""))
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	pending := waitPending(t, approver, 2)
	a2 := pending[0]
	if a2.Approval.ID == a1.Approval.ID {
		a2 = pending[1]
	}
	if a1.Approval.ToolUseID == a2.Approval.ToolUseID || a1.Approval.SessionID != "cc-perm" || *a1.Approval.MatchedRule != "ask-push" {
		t.Fatalf("approvals %+v and %+v", a1.Approval, a2.Approval)
	}
	if _, err := approver.Decide(ctx, a1.Approval.ID, api.DecideRequest{Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); err != nil {
		t.Fatal(err)
	}
	d := gjson.GetBytes(firstOut.Bytes(), "hookSpecificOutput")
	if d.Get("hookEventName").String() != "PermissionRequest" || d.Get("decision.behavior").String() != "allow" ||
		d.Get("decision.updatedInput.command").String() != "git push origin main" {
		t.Errorf("the approved PermissionRequest answered %s", firstOut.String())
	}
	// The second hook dies (Claude Code's dialog answered first).
	syscall.Kill(-second.Process.Pid, syscall.SIGKILL)
	second.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := approver.Approval(ctx, a2.Approval.ID)
		if err == nil && got.Approval.Status == "expired" {
			if got.Decision.ReasonCode != "handed_to_claude" || got.Decision.Actor != "system:hook_gone" || got.WriteBack == nil || got.WriteBack.WroteBack {
				t.Errorf("the handed-off approval: %+v %+v", got.Decision, got.WriteBack)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the approval of a dead hook: %+v %v", got, err)
		}
		time.Sleep(20 * time.Millisecond) // polling an observable state: the record's status
	}
	calls, _ := c.SessionCalls(ctx, "cc-perm")
	for _, call := range calls {
		switch call.ToolUseID {
		case a1.Approval.ToolUseID:
			if call.Effect != "allow" || call.Source != "person" {
				t.Errorf("the approved call: %+v", call)
			}
		case a2.Approval.ToolUseID:
			if call.Effect != "ask" || call.ReasonCode != "handed_to_claude" || call.Source != "claude" {
				t.Errorf("the handed-off call: %+v", call)
			}
		}
	}
	// A PermissionRequest toolgate did not ask for gets no answer.
	out, err := run(installedEvent("cc-perm", "PermissionRequest", "Bash", `{"command":"ls"}`, "")).Output()
	if err != nil || len(out) != 0 {
		t.Errorf("an unasked PermissionRequest: %q %v", out, err)
	}
}

func waitPending(t *testing.T, c *client.Client, n int) []api.ApprovalDetail {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := c.Pending(ctx)
		if err == nil && len(list) >= n {
			return list
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pending, want %d: %v", len(list), n, err)
		}
		time.Sleep(20 * time.Millisecond) // polling an observable state: the approval records
	}
}

// A stranger cannot end an installed session. Any process of the user that
// reaches gate.sock can send a SessionEnd with an installed hook's fields
// naming another's session (session ids are no secret). While the
// session's claude lives and Claude Code's own record of it
// (~/.claude/sessions/PID.json) names the session, only its hooks speak
// for it: the stranger is refused not_owner.
func TestInstalledSessionNotEndedByAStranger(t *testing.T) {
	p := testPaths(t)
	c := startDaemonInProcess(t, p)
	policy := writePolicy(t)
	sid := "cc-victim"
	// The victim's claude: a process with Claude Code's record of its
	// session, whose hook (curl, its child) sends the session's first event.
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".claude", "sessions"), 0o700)
	event, _ := json.Marshal(api.HookRequest{Event: installedEvent(sid, "PreToolUse", "Bash", `{"command":"ls"}`, "t-victim"),
		Installed: &api.InstalledHook{PolicyPath: policy, ApprovalTimeout: api.Duration(time.Minute), ClaudePID: -1}})
	script := `echo '{"sessionId":"` + sid + `"}' > "$HOME/.claude/sessions/$$.json"
body=$(printf '%s' "$0" | sed "s/\"claude_pid\":-1/\"claude_pid\":$$/")
curl -s -o /dev/null -w '%{http_code}\n' --unix-socket "$1" -H "` + api.HeaderProtocol + `: ` + strconv.Itoa(api.ProtocolVersion) + `" -d "$body" http://toolgate/v1/hook
sleep 60`
	// No exec at the end: a process in the middle of exec has no environ to
	// read for a moment, and the daemon reads this one's right after the
	// "200" (a real claude does not exec). Its group is killed at the end.
	claude := exec.Command("sh", "-c", script, string(event), p.Socket())
	claude.Env = append(os.Environ(), "HOME="+home)
	claude.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := claude.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := claude.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-claude.Process.Pid, syscall.SIGKILL); claude.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != "200" {
		t.Fatalf("the victim's first event: %q", line)
	}
	// A stranger names the session and claims no claude of it.
	stranger := &api.InstalledHook{PolicyPath: policy, ApprovalTimeout: api.Duration(time.Minute)}
	_, err = c.Hook(ctx, api.HookRequest{Event: installedEvent(sid, "SessionEnd", "", `{}`, ""), Installed: stranger})
	if errorCode(err) != "not_owner" {
		t.Errorf("the stranger's SessionEnd: %v, want not_owner", err)
	}
	s, err := c.Session(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if s.EndedAt != nil {
		t.Errorf("a process that is not the session's hook ended installed session %s", sid)
	}
	if s.ClaudePID != claude.Process.Pid {
		t.Errorf("the session's claude is now pid %d (the stranger's), not %d", s.ClaudePID, claude.Process.Pid)
	}
}

// The policy of an installed session is not whatever the first hook event
// naming its session_id says. Claude Code's session id is known before the
// first tool call (the transcript
// ~/.claude/projects/<project>/<session_id>.jsonl is written as the
// session starts), and any process that reaches gate.sock can send an
// installed hook's event first, naming a policy file of its own. Were the
// session registered with that policy, the real hook's events would only
// "reopen" it and the person's interactive session would be decided by the
// model's policy: here a push the person's policy asks about must still
// ask.
func TestInstalledSessionPolicyNotTakenByTheFirstEvent(t *testing.T) {
	c := startDaemonInProcess(t, testPaths(t))
	policy := writePolicy(t) // the person's: git push asks
	mine := t.TempDir() + "/allow.json"
	if err := os.WriteFile(mine, []byte(`{"version":1,"default":"allow","rules":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	sid := "cc-next-session"
	// The model's process, first, with its own policy.
	if _, err := c.Hook(ctx, api.HookRequest{Event: installedEvent(sid, "PostToolUse", "Bash", `{"command":"true"}`, "t-first"),
		Installed: &api.InstalledHook{PolicyPath: mine, ApprovalTimeout: api.Duration(time.Minute)}}); err != nil {
		t.Logf("the model's event: %v", err)
	}
	// The session's own hook, with the person's policy.
	claude, _ := proc.Parent(os.Getppid())
	resp, err := c.Hook(ctx, api.HookRequest{Event: installedEvent(sid, "PreToolUse", "Bash", `{"command":"git push origin main"}`, "t-push"),
		Installed: &api.InstalledHook{PolicyPath: policy, ApprovalTimeout: api.Duration(time.Minute), ClaudePID: claude}})
	if err != nil || resp.Verdict == nil {
		t.Fatalf("PreToolUse: %+v %v", resp, err)
	}
	if resp.Verdict.Effect != "ask" {
		t.Errorf("a push the person's policy asks about got %s (rule %q): the session runs under the model's policy", resp.Verdict.Effect, resp.Verdict.RuleID)
	}
}

// The policy an installed hook names is read as its session registers,
// under the lock every installed hook's event takes (installMu). A FIFO
// there, or a device that never ends (a link to /dev/zero), must be
// refused at once: reading it waited for a writer, or without end, and
// every installed session's hook with it, until each was killed or
// denied gate_unavailable.
func TestInstalledPolicyThatIsNotAFile(t *testing.T) {
	c := startDaemonInProcess(t, testPaths(t))
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Lets a daemon still waiting in open(2) go, so that it can stop.
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	good := writePolicy(t)
	for i, path := range []string{fifo, zero} {
		sid := []string{"cc-fifo", "cc-zero"}[i]
		// A bound on a hang, not a wait for an event: the refusal is immediate.
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := c.Hook(hctx, api.HookRequest{Event: installedEvent(sid, "PreToolUse", "Bash", `{"command":"ls"}`, "t-"+sid),
			Installed: &api.InstalledHook{PolicyPath: path, ApprovalTimeout: api.Duration(time.Minute)}})
		cancel()
		if err == nil || client.IsUnavailable(err) {
			t.Errorf("an installed hook naming %s as its policy: %v, want the daemon's refusal", path, err)
		}
		hctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		resp, err := c.Hook(hctx, api.HookRequest{Event: installedEvent("cc-good", "PreToolUse", "Bash", `{"command":"ls"}`, "t-good-"+sid),
			Installed: &api.InstalledHook{PolicyPath: good, ApprovalTimeout: api.Duration(time.Minute)}})
		cancel()
		if err != nil || resp.Verdict == nil || resp.Verdict.Effect != "allow" {
			t.Fatalf("another installed session after a policy at %s: %+v %v", path, resp, err)
		}
	}
}

// An installed session has no run of toolgate's to stop: what may end it
// (its own claude's processes, the model's code among them) cannot end it
// "interrupted" and so withdraw its asks; it ends as ended, and they go
// to Claude Code's dialog.
func TestInstalledSessionIsNotInterrupted(t *testing.T) {
	c := startDaemonInProcess(t, testPaths(t))
	policy := writePolicy(t)
	grandparent, ok := proc.Parent(os.Getppid())
	if !ok {
		t.Fatal("no grandparent")
	}
	const sid = "cc-interrupted"
	in := &api.InstalledHook{PolicyPath: policy, ApprovalTimeout: api.Duration(time.Minute), ClaudePID: grandparent}
	if _, err := c.Hook(ctx, api.HookRequest{Event: installedEvent(sid, "PreToolUse", "Bash", `{"command":"ls"}`, "t-int"), Installed: in}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EndSessionFor(ctx, sid, api.EndInterrupted); errorCode(err) != "bad_request" {
		t.Errorf("an installed session ended interrupted: %v, want bad_request", err)
	}
	if s, err := c.EndSession(ctx, sid); err != nil || s.EndReason != api.EndEnded {
		t.Errorf("the same session ended: %+v %v", s, err)
	}
}
