package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/modelscript"
)

// The cron example runs a gated session and branches on the exit code; a
// second run while the first holds the lock skips its tick.
func TestCronExample(t *testing.T) {
	w := newWorld(t)
	model, err := modelscript.Start([]modelscript.Step{step(bash("toolu_e2e_cron", "rm -f x"))})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	policy := filepath.Join(w.root, "policy.json")
	os.WriteFile(policy, []byte(allowTouchPolicy), 0o600)
	bin := filepath.Join(w.root, "bin")
	os.MkdirAll(bin, 0o700)
	os.Symlink(claudeBin, filepath.Join(bin, "claude"))
	env := append(w.env(model), "PATH="+bin+":"+os.Getenv("PATH"), "TOOLGATE="+toolgateBin, "PROJECT="+w.project, "POLICY="+policy)
	cmd := exec.Command("../examples/cron/toolgate-nightly.sh")
	cmd.Env = env
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 77 || !strings.Contains(string(out), "calls were denied") || !strings.Contains(string(out), "destructive") {
		t.Errorf("exit %d:\n%s", cmd.ProcessState.ExitCode(), out)
	}
	lock, err := os.OpenFile(filepath.Join(w.runtime, "toolgate-nightly.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	flock(t, lock) // a run in progress
	cmd = exec.Command("../examples/cron/toolgate-nightly.sh")
	cmd.Env = env
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 0 || !strings.Contains(string(out), "skipping this tick") {
		t.Errorf("an overlapping tick: exit %d:\n%s", cmd.ProcessState.ExitCode(), out)
	}
}
