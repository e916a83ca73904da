package daemon

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
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
	approver := api.NewClient(p.ApproveSocket())
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

func waitPending(t *testing.T, c *api.Client, n int) []api.ApprovalDetail {
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
