package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/modelscript"
)

// interactiveClaude starts the real claude as a person would, in a tmux
// pane of its own, in the world's project with toolgate's hook installed,
// past Claude Code's first-run screens (onboarding, the folder's trust,
// the API key), with prompt submitted. It returns the pane's screen
// reader and the key sender.
func (w *world) interactiveClaude(model *modelscript.Server, prompt string) (screen func() string, keys func(...string)) {
	w.t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		w.t.Fatal("tmux is needed to drive an interactive claude (Debian: apt-get install tmux)")
	}
	state := map[string]any{"hasCompletedOnboarding": true, "lastOnboardingVersion": "2.1.332", "theme": "dark",
		"bypassPermissionsModeAccepted": false, "customApiKeyResponses": map[string]any{"approved": []string{"sk-test"}, "rejected": []string{}},
		"projects": map[string]any{w.project: map[string]any{"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}}}
	data, _ := json.Marshal(state)
	if err := os.WriteFile(filepath.Join(w.home(), ".claude.json"), data, 0o600); err != nil {
		w.t.Fatal(err)
	}
	sock := filepath.Join(w.root, "tmux.sock")
	tmux := func(args ...string) *exec.Cmd {
		cmd := exec.Command("tmux", append([]string{"-S", sock}, args...)...)
		cmd.Env = append(append(w.env(model), onPath()), "TERM=xterm-256color")
		return cmd
	}
	if out, err := tmux("new-session", "-d", "-x", "160", "-y", "50", "-c", w.project, claudeBin, prompt).CombinedOutput(); err != nil {
		w.t.Fatalf("tmux: %v %s", err, out)
	}
	w.t.Cleanup(func() { tmux("kill-server").Run() })
	screen = func() string {
		out, _ := tmux("capture-pane", "-p").Output()
		return string(out)
	}
	keys = func(k ...string) {
		if out, err := tmux(append([]string{"send-keys"}, k...)...).CombinedOutput(); err != nil {
			w.t.Fatalf("tmux send-keys: %v %s", err, out)
		}
	}
	return screen, keys
}

// eventually polls what until it holds, or fails the test with what last saw.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(runTimeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, seen := cond()
		if ok {
			return
		}
		last = seen
		time.Sleep(100 * time.Millisecond) // polling an observable state: the screen, a record
	}
	t.Fatalf("%s never happened; last seen:\n%s", what, last)
}

// A person answers Yes in Claude Code's own dialog of an installed
// session while toolgate's ask waits: the call runs, and toolgate's
// approval is closed at once (handed to Claude Code), so that a later
// toolgate approve is refused and the audit does not say a person of
// toolgate's approved it after the call ran.
func TestInstalledDialogAnswerClosesTheAsk(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.installProject()
	model, err := modelscript.Start([]modelscript.Step{step(bash("toolu_dialog", "touch dialog-ran"))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	screen, keys := w.interactiveClaude(model, "do the task")
	a := w.pendingApproval().Approval
	eventually(t, "Claude Code's dialog", func() (bool, string) {
		s := screen()
		return strings.Contains(s, "Do you want to proceed?"), s
	})
	keys("Enter") // the dialog's first choice: Yes
	eventually(t, "the call ran", func() (bool, string) {
		_, err := os.Stat(filepath.Join(w.project, "dialog-ran"))
		return err == nil, screen()
	})
	eventually(t, "toolgate's approval closed", func() (bool, string) {
		_, out := w.toolgateOut("show", a.ID, "--json")
		return !strings.Contains(out, `"status":"pending"`) && !strings.Contains(out, `"status": "pending"`), out
	})
	_, out := w.toolgateOut("show", a.ID, "--json")
	if !strings.Contains(out, "handed_to_claude") {
		t.Errorf("approval %s: %s, want it handed to Claude Code", a.ID, out)
	}
	if code, _ := w.toolgateOut("approve", a.ID); code != 79 {
		t.Errorf("toolgate approve after the dialog's answer: exit %d, want 79", code)
	}
	for _, c := range w.audit(a.SessionID) {
		if c.ToolUseID == "toolu_dialog" && (!c.Executed || c.Actor != api.ActorClaudeDialog || c.ReasonCode != api.ReasonHandedToClaude) {
			t.Errorf("audit: %s by %q (%s), executed %v; want handed to Claude Code's dialog, answered there, run",
				c.Effect, c.Actor, c.ReasonCode, c.Executed)
		}
	}
}
