package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
)

// TestDiskFull puts the ledger on a tiny filesystem (a tmpfs with a size
// limit; the test mounts it, so it runs as root, as CI does) and fills it:
// calls are denied gate_unavailable (never allowed), nothing acknowledged
// is lost, and the gate recovers once there is space again.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Fatal("this test mounts a tmpfs and must run as root (CI does)")
	}
	w := newWorld(t)
	mnt := filepath.Join(w.root, "small")
	os.MkdirAll(mnt, 0o700)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=96m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	env := append(w.env(nil), "TOOLGATE_LEDGER="+filepath.Join(mnt, "ledger"))
	logFile := filepath.Join(w.root, "daemon.log")
	serve := func() *exec.Cmd {
		cmd := exec.Command(toolgateBin, "serve")
		cmd.Env = env
		if log, err := os.OpenFile(logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			cmd.Stderr = log
		}
		cmd.Start()
		for range 300 {
			if _, err := w.client().Status(context.Background()); err == nil {
				return cmd
			}
			time.Sleep(10 * time.Millisecond) // the daemon is starting
		}
		cmd.Process.Kill()
		cmd.Wait()
		return nil
	}
	daemon := serve()
	if daemon == nil {
		t.Fatal("the daemon did not start on the small filesystem")
	}
	ctx := context.Background()
	sess, err := w.client().Register(ctx, api.RegisterRequest{Policy: json.RawMessage(stormPolicy), PolicyName: "p",
		SupervisorPID: os.Getpid(), Cwd: w.project})
	if err != nil {
		t.Fatal(err)
	}
	hookEnv := append(append([]string{}, env...), "TOOLGATE_SESSION="+sess.ID, "TOOLGATE_SOCKET="+w.paths().Socket())
	call := func(i int) string {
		pre := fmt.Sprintf(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls %d %s"},"tool_use_id":"toolu_full_%04d"}`,
			i, strings.Repeat("p", 2000), i)
		d := runHook(t, hookEnv, pre)
		if effect := d.Get("permissionDecision").String(); effect != "allow" {
			if reason := reasonCode(d.Get("permissionDecisionReason").String()); reason != "gate_unavailable" {
				t.Errorf("call %d: %s %s, want allow or gate_unavailable", i, effect, reason)
			}
			return effect
		}
		return "allow"
	}
	allowed := map[int]bool{}
	for i := range 20 {
		if call(i) == "allow" {
			allowed[i] = true
		}
	}
	// Fill the filesystem to the last block.
	filler := filepath.Join(mnt, "filler")
	fill(filler)
	denied := 0
	for i := 20; i < 400 && denied < 5; i++ {
		switch call(i) {
		case "allow":
			allowed[i] = true
		case "deny":
			denied++
		default:
			t.Fatalf("call %d: neither allowed nor denied", i)
		}
	}
	if denied == 0 {
		t.Fatal("a full disk never denied a call")
	}
	// Space returns: the same daemon goes on (it refused to write rather
	// than write into a full filesystem, which kills a process that writes
	// through memory-mapped files).
	os.Remove(filler)
	if st, err := w.client().Status(ctx); err != nil || st.PID != daemon.Process.Pid {
		t.Fatalf("the daemon did not survive the full disk: %+v %v", st, err)
	}
	if got := call(10000); got != "allow" {
		t.Fatalf("after recovery: %s", got)
	}
	calls, err := w.client().SessionCalls(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	inAudit := map[string]api.Call{}
	for _, c := range calls {
		inAudit[c.ToolUseID] = c
	}
	for i := range allowed {
		if c, ok := inAudit[fmt.Sprintf("toolu_full_%04d", i)]; !ok || c.Effect != "allow" {
			t.Errorf("call %d was allowed, and the audit has %+v", i, c)
		}
	}
	daemon.Process.Signal(os.Interrupt)
	daemon.Wait()
	verify := exec.Command(toolgateBin, "audit", "verify")
	verify.Env = env
	if out, err := verify.CombinedOutput(); err != nil {
		t.Errorf("audit verify after a full disk: %v %s", err, out)
	}
	log, _ := os.ReadFile(logFile)
	var failures []string
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "level=ERROR") || strings.Contains(line, "SIGBUS") || strings.Contains(line, "fatal") {
			failures = append(failures, line)
		}
	}
	if len(failures) > 3 {
		failures = failures[:3]
	}
	t.Logf("disk full: %d calls allowed and all in the audit, %d denied gate_unavailable while full, then allowed again; the daemon said:\n%s",
		len(allowed), denied, strings.Join(failures, "\n"))
}
