package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toolgate/toolgate/modelscript"
	"github.com/toolgate/toolgate/supervisor"
)

const cronPolicy = `{"version": 3, "default": "deny", "rules": [
  {"id": "allow-touch", "effect": "allow", "tool": "Bash", "input": {"command": {"command": [["touch"]]}}},
  {"id": "deny-rm", "effect": "deny", "tool": "Bash", "input": {"command": {"command": [["rm"]]}}, "reason_code": "destructive"},
  {"id": "ask-mkdir", "effect": "ask", "tool": "Bash", "input": {"command": {"command": [["mkdir"]]}}, "reason_code": "needs_review"}
]}`

// cronJob is the cron example installed as its comment says, in a world
// whose HOME has toolgate and claude in ~/.local/bin.
type cronJob struct {
	w      *world
	script string
}

func newCronJob(t *testing.T, w *world) cronJob {
	bin := filepath.Join(w.home(), ".local", "bin")
	os.MkdirAll(bin, 0o700)
	for name, target := range map[string]string{"toolgate": toolgateBin, "claude": claudeBin} {
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(w.home(), ".config", "toolgate")
	os.MkdirAll(config, 0o700)
	if err := os.WriteFile(filepath.Join(config, "policy.json"), []byte(cronPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("../examples/cron/toolgate-nightly.sh")
	if err != nil {
		t.Fatal(err)
	}
	return cronJob{w: w, script: script}
}

// settings writes ~/.config/toolgate/nightly.env for the next tick: the
// project, the task, ON_ASK, KEEP, and what claude needs to reach the model.
func (j cronJob) settings(t *testing.T, model *modelscript.Server, onAsk string, keep int) {
	env := fmt.Sprintf("PROJECT=%s\nTASK='do the task'\nON_ASK=%s\nKEEP=%d\nexport ANTHROPIC_BASE_URL=%s ANTHROPIC_API_KEY=sk-test CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1\n",
		j.w.project, onAsk, keep, model.URL)
	if err := os.WriteFile(filepath.Join(j.w.home(), ".config", "toolgate", "nightly.env"), []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tick runs the script as cron does: env -i with HOME and cron's PATH only,
// in a session of its own with no terminal, stdin /dev/null.
func (j cronJob) tick(home string) *exec.Cmd {
	cmd := exec.Command("env", "-i", "HOME="+home, "PATH=/usr/bin:/bin", j.script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

func (j cronJob) reports() []string {
	files, _ := filepath.Glob(filepath.Join(j.w.home(), ".local", "state", "toolgate", "nightly", "*.report.json"))
	return files
}

// The cron example works under cron (ON_ASK=wait, the job held while an ask
// waits): run by env -i with HOME and cron's
// default PATH, no terminal, it finds toolgate and claude, reaches the
// desktop's daemon (whose approver decides its ask), keeps its reports
// (the newest KEEP), skips a tick that would overlap a run that waits, and
// says what was denied. Before, it exited 127 ("claude failed on its own")
// and deleted the report it told the user to read.
func TestCronExample(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	j := newCronJob(t, w)
	desk := w.desktopEnv(nil)
	t.Cleanup(func() { w.toolgateIn(desk, "daemon", "stop") })
	if code, out := w.toolgateIn(desk, "daemon", "start"); code != 0 {
		t.Fatalf("the desktop's daemon: %d %s", code, out)
	}

	// 1: an ask, approved from the desktop while the job waits; a tick
	// meanwhile is skipped.
	model, _ := modelscript.Start([]modelscript.Step{step(bash("toolu_cron_ask", "mkdir made-by-cron"))})
	defer model.Close()
	j.settings(t, model, "wait", 2)
	first := j.tick(w.home())
	out := newLines()
	first.Stdout, first.Stderr = out, out
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	id := out.approvalID(t)
	overlap, _ := j.tick(w.home()).CombinedOutput()
	if !strings.Contains(string(overlap), "skipping this tick") {
		t.Errorf("an overlapping tick: %s", overlap)
	}
	if code, out := w.toolgateIn(desk, "approve", id); code != 0 {
		t.Fatalf("approve from the desktop: %d %s", code, out)
	}
	first.Wait()
	if code := first.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the approved tick: exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(w.project, "made-by-cron")); err != nil {
		t.Errorf("the approved call did not run: %v", err)
	}
	reports := j.reports()
	if len(reports) != 1 {
		t.Fatalf("reports after one tick: %v", reports)
	}
	data, _ := os.ReadFile(reports[0])
	var rep supervisor.Report
	if err := json.Unmarshal(data, &rep); err != nil || rep.ExitCode != 0 || rep.Counts.Allowed != 1 || rep.Policy.Version != 3 {
		t.Errorf("the kept report: %v %+v", err, rep)
	}

	// 2: a denial, said in the log; 3: an allowed call; only KEEP=2 kept.
	for i, tt := range []struct {
		use  modelscript.ToolUse
		code int
		log  []string
	}{
		{bash("toolu_cron_rm", "rm -f precious"), 77, []string{"calls were denied", "Bash destructive deny-rm", ".report.json"}},
		{bash("toolu_cron_touch", "touch fine"), 0, []string{"done; nothing was denied"}},
	} {
		model, _ := modelscript.Start([]modelscript.Step{step(tt.use)})
		defer model.Close()
		j.settings(t, model, "wait", 2)
		tick := j.tick(w.home())
		log, _ := tick.CombinedOutput()
		if tick.ProcessState.ExitCode() != tt.code {
			t.Errorf("tick %d: exit %d, want %d:\n%s", i+2, tick.ProcessState.ExitCode(), tt.code, log)
		}
		contains(t, fmt.Sprintf("tick %d's log", i+2), string(log), tt.log...)
	}
	if reports := j.reports(); len(reports) != 2 {
		t.Errorf("KEEP=2 keeps two reports, found %v", reports)
	}
	claudeOut, _ := filepath.Glob(filepath.Join(w.home(), ".local", "state", "toolgate", "nightly", "*.claude.json"))
	if len(claudeOut) != 2 {
		t.Errorf("claude's results kept: %v", claudeOut)
	}

	// Without toolgate to be found, it says what to set, not "claude failed".
	bare := filepath.Join(w.root, "bare-home")
	os.MkdirAll(bare, 0o700)
	log, _ := j.tick(bare).CombinedOutput()
	if !strings.Contains(string(log), "toolgate not found") || !strings.Contains(string(log), "set TOOLGATE=") {
		t.Errorf("no toolgate: %s", log)
	}
}

// The cron example's own pattern (ON_ASK=defer, its default): an ask ends
// the tick at once with 81 and the approval's id in the log; a tick before
// anyone decided starts no new work; the tick after the approval resumes
// the session (the deferred call runs, once) and then starts new work.
func TestCronExampleDefers(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	j := newCronJob(t, w)
	desk := w.desktopEnv(nil)
	t.Cleanup(func() { w.toolgateIn(desk, "daemon", "stop") })
	if code, out := w.toolgateIn(desk, "daemon", "start"); code != 0 {
		t.Fatalf("the desktop's daemon: %d %s", code, out)
	}
	tick := func(name string, want int) string {
		t.Helper()
		cmd := j.tick(w.home())
		log, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != want {
			t.Fatalf("%s: exit %d, want %d:\n%s", name, code, want, log)
		}
		return string(log)
	}

	asks, _ := modelscript.Start([]modelscript.Step{step(bash("toolu_cron_defer", "mkdir made-by-cron"))})
	defer asks.Close()
	j.settings(t, asks, "defer", 5)
	log := tick("the tick that asks", 81)
	contains(t, "the first tick's log", log, "an ask waits for a person: toolgate approve apr_")
	_, rest, _ := strings.Cut(log, "an ask waits for a person: toolgate approve ")
	id, _, _ := strings.Cut(rest, " ")
	if _, err := os.Stat(filepath.Join(w.project, "made-by-cron")); err == nil {
		t.Fatal("the asked call ran before anyone decided")
	}

	// Undecided: the next tick neither resumes it nor starts new work (the
	// new work would ask the same again).
	fresh, _ := modelscript.Start([]modelscript.Step{step(bash("toolu_cron_new", "touch new-work"))})
	defer fresh.Close()
	j.settings(t, fresh, "defer", 5)
	log = tick("the tick before a decision", 81)
	contains(t, "the second tick's log", log, "still wait for a person", id)
	if len(fresh.ToolResults()) != 0 || fileExists(filepath.Join(w.project, "new-work")) {
		t.Fatalf("new work started while an ask waited: %v", fresh.ToolResults())
	}

	if code, out := w.toolgateIn(desk, "approve", id); code != 0 {
		t.Fatalf("approve from the desktop: %d %s", code, out)
	}
	log = tick("the tick after the approval", 0)
	contains(t, "the third tick's log", log, "resumed 1 deferred session", "done; nothing was denied")
	if !fileExists(filepath.Join(w.project, "made-by-cron")) {
		t.Error("the approved call did not run on resume")
	}
	if !fileExists(filepath.Join(w.project, "new-work")) {
		t.Error("no new work after the resume")
	}
	resumed, _ := filepath.Glob(filepath.Join(w.home(), ".local", "state", "toolgate", "nightly", "resumed", "*.json"))
	if len(resumed) != 1 {
		t.Fatalf("the resumed session's report: %v", resumed)
	}
	data, _ := os.ReadFile(resumed[0])
	var rep supervisor.Report
	if err := json.Unmarshal(data, &rep); err != nil || rep.ExitCode != 0 || rep.Counts.Allowed != 1 {
		t.Errorf("the resumed report: %v %+v", err, rep)
	}

	// Once: the next tick has nothing to resume, and its new work runs.
	next, _ := modelscript.Start([]modelscript.Step{step(bash("toolu_cron_next", "touch next-work"))})
	defer next.Close()
	j.settings(t, next, "defer", 5)
	log = tick("the tick after", 0)
	if strings.Contains(log, "resumed") {
		t.Errorf("a session resumed twice: %s", log)
	}
}

// The shipped examples/systemd units do not set NoNewPrivileges=yes:
// toolgate run (and a contained session's hook) refuse a daemon with
// no_new_privs as "a process of a contained session", so with such a unit
// every toolgate run would exit 69 before claude starts.
func TestDaemonOfTheShippedSystemdUnit(t *testing.T) {
	t.Parallel()
	for _, unit := range []string{"toolgate.service", "toolgate-notify.service"} {
		data, err := os.ReadFile("../examples/systemd/" + unit)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "NoNewPrivileges=yes") {
			t.Errorf("%s sets NoNewPrivileges: a daemon with no_new_privs is refused by toolgate run and the hook, "+
				"and an approver with it by the daemon while a contained session lives", unit)
		}
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
