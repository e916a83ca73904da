package e2e

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/schematest"
	"github.com/toolgate/toolgate/modelscript"
)

const askTouchPolicy = `{"version": 1, "default": "allow", "rules": [
  {"id": "ask-touch", "effect": "ask", "tool": "Bash", "input": {"command": {"command": [["touch"]]}}, "reason_code": "needs_review"}
]}`

// runAsync starts a run and returns its stderr lines and a function that
// waits for it.
func (w *world) runAsync(a runArgs) (*lines, func() result) {
	w.t.Helper()
	r, wait := w.runAsyncCmd(a)
	return r.lines, wait
}

// running is a run under way: its stderr lines, its process and its model.
type running struct {
	lines *lines
	cmd   *exec.Cmd
	model *modelscript.Server
}

// runAsyncCmd is runAsync that also gives the run's process.
func (w *world) runAsyncCmd(a runArgs) (*running, func() result) {
	w.t.Helper()
	l := newLines()
	a.stderrLines = l
	cmd, res, finish := w.start(a)
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	return &running{l, cmd, res.model}, func() result {
		cmd.Wait()
		return finish(cmd)
	}
}

// 1: ask -> toolgate approve from another process -> the call runs once;
// the decision's actor is the OS user; the report says source person.
func TestApproveFromAnotherProcess(t *testing.T) {
	t.Parallel()
	forTransports(t, func(t *testing.T, transport string) {
		w := newWorld(t)
		l, wait := w.runAsync(runArgs{transport: transport, policy: askTouchPolicy, script: []modelscript.Step{step(bash("toolu_e2e_appr", "touch approved.txt"))}})
		id := l.approvalID(t)
		if code, out := w.toolgate("approve", id, "--reason", "fine by me"); code != 0 || out != "" {
			t.Fatalf("approve: exit %d %q (want 0, quiet)", code, out)
		}
		r := wait()
		if r.code != 0 {
			t.Fatalf("exit %d", r.code)
		}
		if _, err := os.Stat(filepath.Join(w.project, "approved.txt")); err != nil {
			t.Fatal("the approved call did not run")
		}
		// The terminal that waited hears who decided.
		contains(t, "run's stderr", r.stderr, id+" approved by user:")
		c := r.call(t, "toolu_e2e_appr")
		if c.Effect != "allow" || c.Source != "person" || c.Actor != "user:root" && !strings.HasPrefix(c.Actor, "user:") || c.ApprovalID != id || !c.Executed {
			t.Errorf("report: %+v", c)
		}
		_, show := w.toolgate("show", id)
		contains(t, "toolgate show", show, "approved by user:", "decision allow", "fine by me", "written back to claude: allow")
		// The design article's three documents of a real session, exactly as their
		// schemas describe them.
		_, showJSON := w.toolgateOut("show", "--json", id)
		var detail struct {
			Approval  json.RawMessage `json:"approval"`
			Decision  json.RawMessage `json:"decision"`
			WriteBack json.RawMessage `json:"write_back"`
		}
		if err := json.Unmarshal([]byte(showJSON), &detail); err != nil {
			t.Fatalf("show --json: %v: %s", err, showJSON)
		}
		schematest.Validate(t, api.SchemaApproval, detail.Approval)
		schematest.Validate(t, api.SchemaDecision, detail.Decision)
		schematest.Validate(t, api.SchemaWriteBack, detail.WriteBack)
		if calls := w.audit(r.report.SessionID); calls[0].Executions != 1 {
			t.Errorf("ran %d times", calls[0].Executions)
		}
	})
}

// 2: ask -> toolgate deny --reason -> not run; the model's tool_result
// names the rule and the reason_code (never the person's note); exit 77.
func TestDenyFromAnotherProcess(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	l, wait := w.runAsync(runArgs{policy: askTouchPolicy, script: []modelscript.Step{step(bash("toolu_e2e_deny", "touch denied.txt"))}})
	id := l.approvalID(t)
	if code, out := w.toolgate("deny", id, "--reason", "private note about the intern"); code != 0 {
		t.Fatalf("deny: %d %s", code, out)
	}
	r := wait()
	if r.code != 77 {
		t.Fatalf("exit %d, want 77", r.code)
	}
	contains(t, "run's stderr", r.stderr, id+" denied by user:")
	if _, err := os.Stat(filepath.Join(w.project, "denied.txt")); err == nil {
		t.Fatal("the denied call ran")
	}
	text := r.saw(t, "toolu_e2e_deny").Text
	contains(t, "the model's tool_result", text, "rule ask-touch", "reason_code needs_review")
	if strings.Contains(text, "intern") {
		t.Errorf("the approver's note reached the model: %s", text)
	}
	if c := r.call(t, "toolu_e2e_deny"); c.Source != "person" || c.ReasonCode != "needs_review" {
		t.Errorf("report: %+v", c)
	}
}

// 3: a 5-second approval timeout and nobody answering: deny
// approval_expired, exit 75; a later approve is refused.
func TestApprovalExpires(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	l, wait := w.runAsync(runArgs{policy: askTouchPolicy, toolgate: []string{"--approval-timeout", "5s"},
		script: []modelscript.Step{step(bash("toolu_e2e_exp", "touch late.txt"))}})
	id := l.approvalID(t)
	r := wait()
	if r.code != 75 {
		t.Fatalf("exit %d, want 75", r.code)
	}
	c := r.call(t, "toolu_e2e_exp")
	if c.ReasonCode != "approval_expired" || c.Source != "expiry" || c.Executed {
		t.Errorf("report: %+v", c)
	}
	contains(t, "the model's tool_result", r.saw(t, "toolu_e2e_exp").Text, "reason_code approval_expired")
	code, out := w.toolgate("approve", id)
	if code != 75 || !strings.Contains(out, "expired") {
		t.Errorf("a late approve: exit %d %q", code, out)
	}
	if _, err := os.Stat(filepath.Join(w.project, "late.txt")); err == nil {
		t.Fatal("the expired call ran")
	}
}

// 4: an ask held longer than the CLI's idle watchdog still completes:
// run's http hook holds Claude Code's request, which the watchdog does not
// time, and the prompt tool the hook binary's asks go to sends progress
// notifications. The CLI checks its idle limit every 30 s (observed on the
// pinned release), so with the limit at 3 s the wait must pass 33 s to be
// able to fail: it waits 36 s.
func TestLongWaitSurvivesTheIdleWatchdog(t *testing.T) {
	t.Parallel()
	forTransports(t, func(t *testing.T, transport string) {
		t.Parallel()
		w := newWorld(t)
		l, wait := w.runAsync(runArgs{transport: transport, policy: askTouchPolicy, claudeEnv: []string{"CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT=3000"},
			script: []modelscript.Step{step(bash("toolu_e2e_slow", "touch slow.txt"))}})
		id := l.approvalID(t)
		time.Sleep(36 * time.Second) // the scenario itself: a person who takes longer than the watchdog
		if code, out := w.toolgate("approve", id); code != 0 {
			t.Fatalf("approve: %d %s", code, out)
		}
		r := wait()
		if r.code != 0 {
			t.Fatalf("exit %d", r.code)
		}
		if _, err := os.Stat(filepath.Join(w.project, "slow.txt")); err != nil {
			t.Fatal("the call approved after 36 s did not run")
		}
	})
}

// 5: the daemon is SIGKILLed while a call waits; run brings it back and
// asks again for the same tool_use_id; approve then lets the call run
// exactly once, and the approval record is the same one.
func TestDaemonKilledWhileWaiting(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	policy := `{"version": 1, "default": "allow", "rules": [
	  {"id": "ask-tee", "effect": "ask", "tool": "Bash", "input": {"command": {"command": [["tee"]]}}, "reason_code": "needs_review"}]}`
	l, wait := w.runAsync(runArgs{policy: policy, script: []modelscript.Step{step(bash("toolu_e2e_crash", "echo ran | tee -a ran.txt"))}})
	id := l.approvalID(t)
	st, err := w.client().Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := os.FindProcess(st.PID)
	p.Kill()
	if !waitGone(st.PID, 10*time.Second) {
		t.Fatal("the daemon survived SIGKILL")
	}
	// run's watcher restarts it; approving works once it is back.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, out := w.toolgate("approve", id)
		if code == 0 {
			break
		}
		if code != 69 || time.Now().After(deadline) {
			t.Fatalf("approve after the restart: exit %d %s", code, out)
		}
		time.Sleep(100 * time.Millisecond) // polling an observable state: the daemon's return
	}
	r := wait()
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	data, _ := os.ReadFile(filepath.Join(w.project, "ran.txt"))
	if strings.Count(string(data), "ran") != 1 {
		t.Fatalf("the call ran %d times", strings.Count(string(data), "ran"))
	}
	if c := r.call(t, "toolu_e2e_crash"); c.ApprovalID != id || c.Effect != "allow" || !c.Executed {
		t.Errorf("report: %+v (want approval %s)", c, id)
	}
	if st2, err := w.client().Status(t.Context()); err != nil || st2.PID == st.PID {
		t.Errorf("the daemon was not restarted: %+v %v", st2, err)
	}
}

// 6: the model's own Bash tool starts a detached process that later runs
// toolgate approve for the model's next, pending call: refused
// self_approval; the call stays pending and expires.
func TestDetachedSelfApprovalIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	log := filepath.Join(w.root, "detached.log")
	// The script is a file of the project, as an allowed program's code
	// is: the guard denies a command line that names toolgate approve.
	detached := w.detached(`for i in $(seq 1 100); do id=$(toolgate pending | awk '/^apr_/ {print $1}' | head -n 1); `+
		`if [ -n "$id" ]; then toolgate approve "$id"; echo "exit $?"; exit 0; fi; sleep 0.2; done`+"\n", log)
	policy := `{"version": 1, "default": "allow", "rules": [
	  {"id": "ask-touch", "effect": "ask", "tool": "Bash", "input": {"command": {"command": [["touch"]]}}, "reason_code": "needs_review"}]}`
	l, wait := w.runAsync(runArgs{policy: policy, toolgate: append([]string{"--approval-timeout", "8s"}, beneathTheBoundary...),
		claudeEnv: []string{"PATH=" + filepath.Dir(toolgateBin) + ":" + os.Getenv("PATH")},
		script:    []modelscript.Step{step(bash("toolu_e2e_detach", detached)), step(bash("toolu_e2e_next", "touch forged.txt"))}})
	l.approvalID(t)
	r := wait()
	if r.code != 75 {
		t.Fatalf("exit %d, want 75", r.code)
	}
	if _, err := os.Stat(filepath.Join(w.project, "forged.txt")); err == nil {
		t.Fatal("the model approved its own call")
	}
	out, _ := os.ReadFile(log)
	contains(t, "the detached process's output", string(out), "a gated session cannot decide its own approvals", "exit 77")
	if c := r.call(t, "toolu_e2e_next"); c.ReasonCode != "approval_expired" {
		t.Errorf("report: %+v", c)
	}
}

// 7: two parallel Read calls in one message both ask: both wait, and each
// is resolved on its own.
func TestTwoParallelAsks(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, b := w.writeFile("a.txt", "alpha"), w.writeFile("b.txt", "bravo")
	policy := `{"version": 1, "default": "allow", "rules": [
	  {"id": "ask-reads", "effect": "ask", "tool": "Read", "reason_code": "needs_review"}]}`
	reads := step(modelscript.ToolUse{ID: "toolu_e2e_ra", Name: "Read", Input: map[string]string{"file_path": a}},
		modelscript.ToolUse{ID: "toolu_e2e_rb", Name: "Read", Input: map[string]string{"file_path": b}})
	l, wait := w.runAsync(runArgs{policy: policy, script: []modelscript.Step{reads}})
	first, second := l.approvalID(t), l.approvalID(t)
	for _, id := range []string{first, second} {
		_, show := w.toolgate("show", id)
		if strings.Contains(show, "a.txt") {
			w.toolgate("approve", id)
		} else {
			w.toolgate("deny", id)
		}
	}
	r := wait()
	if r.code != 77 {
		t.Fatalf("exit %d, want 77", r.code)
	}
	if res := r.saw(t, "toolu_e2e_ra"); !strings.Contains(res.Text, "alpha") {
		t.Errorf("the approved read: %q", res.Text)
	}
	if res := r.saw(t, "toolu_e2e_rb"); strings.Contains(res.Text, "bravo") || !strings.Contains(res.Text, "reason_code needs_review") {
		t.Errorf("the denied read: %q", res.Text)
	}
}

// toolgate watch (line mode, stdin a pipe) shows the ask of a real gated
// session, approves it, and the call runs.
func TestWatchApproves(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	l, wait := w.runAsync(runArgs{policy: askTouchPolicy, script: []modelscript.Step{step(bash("toolu_e2e_watch", "touch watched.txt"))}})
	id := l.approvalID(t)
	watch := exec.Command(toolgateBin, "watch")
	watch.Env = w.env(nil)
	stdin, _ := watch.StdinPipe()
	stdout := newLines()
	watch.Stdout = stdout
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer watch.Process.Kill()
	waitLine(t, stdout, id, "touch watched.txt")
	io.WriteString(stdin, "a "+id+"\n")
	waitLine(t, stdout, "approved", id, "by user:")
	r := wait()
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	if _, err := os.Stat(filepath.Join(w.project, "watched.txt")); err != nil {
		t.Fatal("the call approved in watch did not run")
	}
	io.WriteString(stdin, "q\n")
	if err := watch.Wait(); err != nil {
		t.Errorf("watch: %v", err)
	}
}

// waitLine waits for a line that holds every part.
func waitLine(t *testing.T, l *lines, parts ...string) {
	t.Helper()
	timeout := time.After(runTimeout)
	for {
		select {
		case line := <-l.ch:
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(line, p)
			}
			if ok {
				return
			}
		case <-timeout:
			t.Fatalf("no line with %q", parts)
		}
	}
}

// A person who stops toolgate run while an ask waits (Ctrl-C in its
// terminal, or SIGTERM from a job's supervisor) gets exit 130, and the
// audit says the ask was withdrawn when the run stopped, not that its
// time ran out; the call did not run.
func TestInterruptedRunWithdrawsItsAsk(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			r, wait := w.runAsyncCmd(runArgs{policy: askTouchPolicy, script: []modelscript.Step{step(bash("toolu_e2e_int", "touch asked.txt"))}})
			id := r.lines.approvalID(t)
			r.cmd.Process.Signal(sig)
			res := wait()
			if res.code != 130 {
				t.Errorf("exit %d, want 130", res.code)
			}
			if _, err := os.Stat(filepath.Join(w.project, "asked.txt")); err == nil {
				t.Error("the call ran")
			}
			c := res.call(t, "toolu_e2e_int")
			if c.Effect != api.EffectDeny || c.ReasonCode != api.ReasonApprovalWithdrawn || c.Actor != api.ActorWithdrawn || c.Executed {
				t.Errorf("the report's call: %+v, want a deny %s by %s", c, api.ReasonApprovalWithdrawn, api.ActorWithdrawn)
			}
			if res.report.Counts.Expired != 0 || !strings.Contains(res.stderr, "1 withdrawn") {
				t.Errorf("counts %+v, summary %q: want the ask withdrawn, none expired", res.report.Counts, res.stderr)
			}
			for _, a := range w.audit(res.report.SessionID) {
				if a.ToolUseID == "toolu_e2e_int" && (a.ReasonCode != api.ReasonApprovalWithdrawn || a.Actor != api.ActorWithdrawn) {
					t.Errorf("the audit's call: %+v", a)
				}
			}
			// A person who answers late is told what became of it.
			if code, out := w.toolgate("approve", id); code != 79 || !strings.Contains(out, "withdrawn") {
				t.Errorf("approve after the run stopped: exit %d %q, want 79 and why", code, out)
			}
		})
	}
}
