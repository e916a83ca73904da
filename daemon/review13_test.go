package daemon

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/proc"
)

// Review 13, attack G: an installed session's end is not its owner's.
// Any process of the user that reaches gate.sock can send a SessionEnd
// with an installed hook's fields naming another's session (session ids
// are no secret). While the session's claude lives and Claude Code's own
// record of it (~/.claude/sessions/PID.json) names the session, only its
// hooks speak for it: the stranger is refused not_owner.
func TestReviewInstalledSessionEndedByAStranger(t *testing.T) {
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

// Review 13, attack H: the policy of an installed session is whatever the
// first hook event naming its session_id says. Claude Code's session id
// is known before the first tool call (the transcript
// ~/.claude/projects/<project>/<session_id>.jsonl is written as the
// session starts), and any process that reaches gate.sock can send an
// installed hook's event first, naming a policy file of its own: the
// session is registered with that policy, and the real hook's events only
// "reopen" it. The person's interactive session is then decided by the
// model's policy: here a push its own policy asks about is allowed.
func TestReviewInstalledSessionPolicyTakenFirst(t *testing.T) {
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
