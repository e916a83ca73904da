package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/modelscript"
)

// desktopEnv is a desktop session's environment: XDG_RUNTIME_DIR is set,
// the XDG state and config directories are HOME's defaults.
func (w *world) desktopEnv(model *modelscript.Server) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home(), "XDG_RUNTIME_DIR=" + w.runtime}, claudeVars(model)...)
}

// cronEnv is cron's environment: HOME and cron's default PATH, nothing
// else toolgate reads. TMPDIR keeps the daemon a cron run may start out of
// the machine's shared /tmp/toolgate-UID; it is still the directory
// toolgate falls back to without XDG_RUNTIME_DIR.
func (w *world) cronEnv(model *modelscript.Server) []string {
	return append([]string{"PATH=/usr/bin:/bin", "HOME=" + w.home(), "TMPDIR=" + w.tmp()}, claudeVars(model)...)
}

func (w *world) home() string { return filepath.Join(w.root, "home") }

func (w *world) tmp() string {
	dir := filepath.Join(w.root, "tmp")
	os.MkdirAll(dir, 0o700)
	return dir
}

// claudeVars are what claude needs to reach the scripted model.
func claudeVars(model *modelscript.Server) []string {
	if model == nil {
		return nil
	}
	return []string{"ANTHROPIC_BASE_URL=" + model.URL, "ANTHROPIC_API_KEY=sk-test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
}

// daemonStatus is toolgate daemon status --json in env.
func (w *world) daemonStatus(env []string) (code int, st struct {
	Running    bool   `json:"running"`
	PID        int    `json:"pid"`
	RuntimeDir string `json:"runtime_dir"`
	Ledger     string `json:"ledger"`
	Pending    int    `json:"pending"`
}) {
	w.t.Helper()
	cmd := exec.Command(toolgateBin, "daemon", "status", "--json")
	cmd.Env = env
	out, _ := cmd.Output()
	if err := json.Unmarshal(out, &st); err != nil {
		w.t.Fatalf("daemon status --json: %v: %s", err, out)
	}
	return cmd.ProcessState.ExitCode(), st
}

// One daemon per user, whatever the environment: a run under cron's
// environment (no XDG_RUNTIME_DIR) reaches the daemon a desktop session
// started, and the desktop's approvers reach the one a cron run started.
// Before, each looked for sockets of its own: the second exited 69, "ledger
// ... is in use by another process".
func TestOneDaemonWhateverTheEnvironment(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	desk, cron := w.desktopEnv(nil), w.cronEnv(nil)
	t.Cleanup(func() { w.toolgateIn(desk, "daemon", "stop") })
	script := []modelscript.Step{step(bash("toolu_env_1", "touch one.txt"))}
	fallback := filepath.Join(w.tmp(), "toolgate-"+strconv.Itoa(os.Getuid()))

	// A desktop daemon, then a cron run.
	if code, out := w.toolgateIn(desk, "daemon", "start"); code != 0 || out != "" {
		t.Fatalf("daemon start: %d %q", code, out)
	}
	_, desktop := w.daemonStatus(desk)
	run, wait := w.runAsyncCmd(runArgs{policy: askTouchPolicy, script: script, environ: w.cronEnv})
	id := run.lines.approvalID(t)
	if code, st := w.daemonStatus(cron); code != 0 || st.PID != desktop.PID || st.Pending != 1 {
		t.Errorf("the cron environment's daemon: exit %d %+v, want the desktop's, pid %d", code, st, desktop.PID)
	}
	if code, out := w.toolgateIn(desk, "pending"); code != 0 || !strings.Contains(out, id) {
		t.Errorf("the desktop does not see the cron run's ask: %d %s", code, out)
	}
	if code, out := w.toolgateIn(desk, "approve", id); code != 0 {
		t.Fatalf("approve from the desktop: %d %s", code, out)
	}
	r := wait()
	if c := r.call(t, "toolu_env_1"); r.code != 0 || c.Effect != "allow" || c.Source != "person" || !c.Executed {
		t.Errorf("the cron run: exit %d, %+v", r.code, c)
	}
	if code, out := w.toolgateIn(cron, "doctor", "--json"); !strings.Contains(out, `"pid `+strconv.Itoa(desktop.PID)) {
		t.Errorf("doctor in the cron environment does not find the desktop's daemon: %d %s", code, out)
	}
	if _, err := os.Stat(fallback); !os.IsNotExist(err) {
		t.Errorf("the cron run made sockets of its own in %s: %v", fallback, err)
	}

	// The reverse: no daemon, a cron run starts one; the desktop finds it.
	if code, out := w.toolgateIn(desk, "daemon", "stop"); code != 0 {
		t.Fatalf("daemon stop: %d %s", code, out)
	}
	run, wait = w.runAsyncCmd(runArgs{policy: askTouchPolicy, script: []modelscript.Step{step(bash("toolu_env_2", "touch two.txt"))}, environ: w.cronEnv})
	id = run.lines.approvalID(t)
	if code, st := w.daemonStatus(desk); code != 0 || st.RuntimeDir != fallback || st.Pending != 1 {
		t.Errorf("the desktop's view of the cron run's daemon: exit %d %+v, want sockets in %s", code, st, fallback)
	}
	if code, out := w.toolgateIn(desk, "approve", id); code != 0 {
		t.Fatalf("approve from the desktop: %d %s", code, out)
	}
	if r := wait(); r.code != 0 || !r.call(t, "toolu_env_2").Executed {
		t.Errorf("the second cron run: exit %d", r.code)
	}
}

// Approvers never start a daemon: with none running there is nothing to
// decide, and they say so (exit 69) instead of leaving one behind.
func TestApproversStartNoDaemon(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, args := range [][]string{{"pending"}, {"show", "apr_x"}, {"approve", "apr_x"}, {"deny", "apr_x"}, {"daemon", "status"}} {
		code, out := w.toolgate(args...)
		if code != 69 || !strings.Contains(out, "no toolgate daemon") || !strings.Contains(out, "Try: ") {
			t.Errorf("%v: exit %d %q, want 69 saying no daemon runs", args, code, out)
		}
	}
	if _, err := os.Stat(w.paths().Socket()); !os.IsNotExist(err) {
		t.Errorf("an approver started a daemon: %v", err)
	}
	if code, out := w.toolgate("daemon", "stop"); code != 0 || out != "" {
		t.Errorf("daemon stop with none running: %d %q", code, out)
	}
}

// SIGTERM (toolgate daemon stop) stops the daemon at once even while a
// call waits for a person: the approval stays pending in the ledger, the
// run starts a daemon again and goes on waiting for it, and one approval
// later the call runs, once. Before, the daemon waited out its 10 s
// shutdown timeout on the waiting request and exited with an error.
func TestDaemonStopsWhileAsksWait(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	run, wait := w.runAsyncCmd(runArgs{policy: askTouchPolicy, script: []modelscript.Step{step(bash("toolu_stop_1", "touch once.txt"))}})
	id := run.lines.approvalID(t)
	_, before := w.daemonStatus(w.env(nil))
	start := time.Now()
	if code, out := w.toolgate("daemon", "stop"); code != 0 {
		t.Fatalf("daemon stop: %d %s", code, out)
	}
	t.Logf("toolgate daemon stop took %s with an ask waiting", time.Since(start).Round(time.Millisecond))
	log, _ := os.ReadFile(w.paths().LogFile())
	stopped := strings.Index(string(log), "daemon stopped")
	if stopped < 0 || strings.Contains(string(log), "toolgate: ") {
		t.Errorf("the daemon did not stop cleanly:\n%s", log)
	}
	// The run's daemon comes back; the ask is still the same one.
	id2 := w.waitPending(t)
	if id2 != id {
		t.Errorf("after the restart the pending ask is %s, want %s", id2, id)
	}
	if _, after := w.daemonStatus(w.env(nil)); after.PID == before.PID {
		t.Errorf("the daemon did not stop: pid %d", after.PID)
	}
	if code, out := w.toolgate("approve", id); code != 0 {
		t.Fatalf("approve: %d %s", code, out)
	}
	if r := wait(); r.code != 0 || !r.call(t, "toolu_stop_1").Executed || r.report.Counts.Executed != 1 {
		t.Errorf("exit %d, %+v", r.code, r.report.Counts)
	}
}

// waitPending returns the one pending approval's id, following toolgate
// watch's event stream until there is one.
func (w *world) waitPending(t *testing.T) string {
	t.Helper()
	watch := exec.Command(toolgateBin, "watch", "--lines")
	watch.Env = w.env(nil)
	l := newLines()
	watch.Stdout = l
	in, _ := watch.StdinPipe()
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); watch.Wait() }()
	deadline := time.After(runTimeout)
	for {
		select {
		case line := <-l.ch:
			if f := strings.Fields(line); len(f) > 2 && (f[1] == "waiting" || f[1] == "ask") {
				return f[2]
			}
		case <-deadline:
			t.Fatal("no approval became pending")
		}
	}
}
