package daemon

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
)

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
		if err == nil || api.IsUnavailable(err) {
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
