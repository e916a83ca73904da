package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/modelscript"
)

// toolgate run --on-ask defer ends a run at its ask, a person decides
// whenever they like, and toolgate resume runs claude on, once.

const deferPolicy = `{"version": 1, "default": "allow", "rules": [
  {"id": "ask-touch", "effect": "ask", "tool": "Bash", "input": {"command": {"command": [["touch"]]}}, "reason_code": "needs_review"}
]}`

// resume runs toolgate resume --json with a scripted model for the rest
// of the conversation, and returns its exit code, what it listed, and the
// model (what claude sent it).
func (w *world) resume(script []modelscript.Step, args ...string) (int, []map[string]any, *modelscript.Server) {
	w.t.Helper()
	model, err := modelscript.Start(script)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { model.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, toolgateBin, append([]string{"resume", "--json"}, args...)...)
	cmd.Env = w.env(model)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		w.t.Fatalf("toolgate resume: %v", err)
	}
	w.t.Logf("toolgate resume exited %d:\n%s\nstderr:\n%s", cmd.ProcessState.ExitCode(), out, stderr.String())
	var doc struct {
		Sessions []map[string]any `json:"sessions"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		w.t.Fatalf("resume --json: %v: %s", err, out)
	}
	return cmd.ProcessState.ExitCode(), doc.Sessions, model
}

// deferred runs a session that defers its touch, and checks the run ended
// at once with 81 and the approval in its report.
func (w *world) deferred(t *testing.T, steps []modelscript.Step, extra ...string) (result, string) {
	t.Helper()
	start := time.Now()
	r := w.run(runArgs{policy: deferPolicy, toolgate: append([]string{"--on-ask", "defer"}, extra...), script: steps})
	if r.code != 81 || r.report.Deferred == nil || r.report.Counts.Deferred != 1 {
		t.Fatalf("the deferred run: exit %d, deferred %+v, counts %+v", r.code, r.report.Deferred, r.report.Counts)
	}
	t.Logf("the deferred run took %s", time.Since(start).Round(time.Millisecond))
	id := r.report.Deferred.ApprovalID
	contains(t, "the summary", r.stderr, id, "toolgate resume")
	if _, err := os.Stat(filepath.Join(w.project, "deferred.txt")); err == nil {
		t.Fatal("the deferred call ran before anyone decided")
	}
	return r, id
}

// The run defers through either hook transport (the http hook answers
// "defer" as the hook binary does); resume goes on with the default.
func TestDeferApproveResume(t *testing.T) {
	t.Parallel()
	forTransports(t, func(t *testing.T, transport string) {
		w := newWorld(t)
		r, id := w.deferred(t, []modelscript.Step{step(bash("toolu_def", "touch deferred.txt"))}, "--hook-transport", transport)
		// Nothing decided yet: resume leaves the session waiting.
		code, listed, model := w.resume(nil)
		if code != 0 || len(listed) != 1 || listed[0]["outcome"] != "waiting" || len(model.ToolResults()) != 0 {
			t.Fatalf("resume before a decision: exit %d %v", code, listed)
		}
		if code, out := w.toolgate("approve", id); code != 0 {
			t.Fatalf("approve: %d %s", code, out)
		}
		// --project of another directory leaves it alone.
		elsewhere := t.TempDir()
		code, listed, model = w.resume(nil, "--project", elsewhere)
		if code != 0 || len(listed) != 0 || len(model.ToolResults()) != 0 {
			t.Fatalf("resume --project %s: exit %d %v", elsewhere, code, listed)
		}
		code, listed, model = w.resume([]modelscript.Step{{Text: "done"}}, "--project", w.project)
		if code != 0 || len(listed) != 1 || listed[0]["outcome"] != "resumed" {
			t.Fatalf("resume: exit %d %v", code, listed)
		}
		if _, err := os.Stat(filepath.Join(w.project, "deferred.txt")); err != nil {
			t.Error("the approved call did not run")
		}
		if _, ok := model.ToolResults()["toolu_def"]; !ok {
			t.Error("the model never heard how its call went")
		}
		var call api.Call
		for _, c := range w.audit(r.report.SessionID) {
			if c.ToolUseID == "toolu_def" {
				call = c
			}
		}
		// The resume's proposal of the call is its one repeat.
		if call.Effect != "allow" || call.Executions != 1 || !strings.HasPrefix(call.Actor, "user:") || len(call.Repeats) != 1 ||
			call.Repeats[0].Effect != "allow" || call.Repeats[0].SessionID != r.report.SessionID || !call.Repeats[0].Resume {
			t.Errorf("the audit of the deferred call: %+v", call)
		}
		// A second resume finds nothing to do.
		code, listed, model = w.resume(nil)
		if code != 0 || len(listed) != 0 || len(model.ToolResults()) != 0 {
			t.Errorf("a second resume: exit %d %v", code, listed)
		}
	})
}

func TestDeferDenyAndExpiry(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"deny", "expire"} {
		t.Run(how, func(t *testing.T) {
			w := newWorld(t)
			timeout := "1h"
			if how == "expire" {
				timeout = "2s"
			}
			_, id := w.deferred(t, []modelscript.Step{step(bash("toolu_def", "touch deferred.txt"))}, "--approval-timeout", timeout)
			want, reason := 77, "needs_review"
			if how == "deny" {
				if code, out := w.toolgate("deny", id); code != 0 {
					t.Fatalf("deny: %d %s", code, out)
				}
			} else {
				// The daemon expires it; wait on it as toolgate run would.
				if v, err := w.client().Wait(context.Background(), id); err != nil || v.ReasonCode != api.ReasonApprovalExpired {
					t.Fatalf("wait for the expiry: %+v %v", v, err)
				}
				want, reason = 75, api.ReasonApprovalExpired
			}
			code, listed, model := w.resume([]modelscript.Step{{Text: "done"}})
			if code != want || len(listed) != 1 || listed[0]["outcome"] != "resumed" {
				t.Fatalf("resume: exit %d (want %d) %v", code, want, listed)
			}
			if _, err := os.Stat(filepath.Join(w.project, "deferred.txt")); err == nil {
				t.Error("a call nobody approved ran")
			}
			seen := model.ToolResults()["toolu_def"]
			if !seen.IsError || !strings.Contains(seen.Text, reason) {
				t.Errorf("the model saw %+v, want the deny with %s", seen, reason)
			}
		})
	}
}

// One message with two calls: the allowed one runs in the first run, the
// asking one is deferred. With two asks, Claude Code would keep only the
// last deferred one: the second is denied deferred_sibling.
func TestDeferInABatch(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r, id := w.deferred(t, []modelscript.Step{step(bash("toolu_echo", "echo ran > echo.txt"), bash("toolu_def", "touch deferred.txt"),
		bash("toolu_sib", "touch sibling.txt"))})
	if _, err := os.Stat(filepath.Join(w.project, "echo.txt")); err != nil {
		t.Error("the allowed sibling did not run")
	}
	if c := r.call(t, "toolu_sib"); c.Effect != "deny" || c.ReasonCode != api.ReasonDeferredSibling {
		t.Errorf("the second ask: %+v", c)
	}
	if code, out := w.toolgate("approve", id); code != 0 {
		t.Fatalf("approve: %d %s", code, out)
	}
	// The resumed run reports the whole session: the sibling was denied,
	// so it ends 77.
	if code, listed, _ := w.resume([]modelscript.Step{{Text: "done"}}); code != 77 || len(listed) != 1 || listed[0]["outcome"] != "resumed" {
		t.Fatalf("resume: exit %d %v", code, listed)
	}
	if _, err := os.Stat(filepath.Join(w.project, "deferred.txt")); err != nil {
		t.Error("the deferred call did not run on resume")
	}
	if _, err := os.Stat(filepath.Join(w.project, "sibling.txt")); err == nil {
		t.Error("the denied sibling ran")
	}
}

// A person's approval of a deferred call runs it once: the model that
// proposes the same tool_use_id and input again in the resumed session
// (it chooses the ids) gets duplicate_tool_use_id, however often it
// tries, and the report and the audit say the call ran once.
func TestDeferredApprovalRunsOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const deploy = "touch deferred.txt; echo ran >> runs.txt"
	r, id := w.deferred(t, []modelscript.Step{step(bash("toolu_def", deploy))})
	if code, out := w.toolgate("approve", id); code != 0 {
		t.Fatalf("approve: %d %s", code, out)
	}
	code, listed, _ := w.resume([]modelscript.Step{step(bash("toolu_def", deploy)), step(bash("toolu_def", deploy)),
		step(bash("toolu_def", deploy)), {Text: "done"}})
	if len(listed) != 1 || listed[0]["outcome"] != "resumed" {
		t.Fatalf("resume: exit %d %v", code, listed)
	}
	if code != 77 {
		t.Errorf("resume: exit %d, want 77 (the repeats were denied)", code)
	}
	if runs, _ := os.ReadFile(filepath.Join(w.project, "runs.txt")); string(runs) != "ran\n" {
		t.Errorf("the approved call ran %d times: %q", strings.Count(string(runs), "ran"), runs)
	}
	// The resume's proposal got the person's allow; every later one a deny.
	for _, c := range w.audit(r.report.SessionID) {
		if c.ToolUseID != "toolu_def" {
			continue
		}
		if c.Executions != 1 || len(c.Repeats) < 2 || c.Repeats[0].Effect != "allow" || !c.Repeats[0].Resume {
			t.Errorf("the audit of the deferred call: %d executions, repeats %+v", c.Executions, c.Repeats)
		}
		for _, rep := range c.Repeats[1:] {
			if rep.Effect != "deny" || rep.ReasonCode != api.ReasonDuplicateToolUseID {
				t.Errorf("a repeat after the resume: %+v, want a deny duplicate_tool_use_id", rep)
			}
		}
	}
}

// Two asks of one message, whose hooks Claude Code runs at once (Reads):
// one defers and the other is denied deferred_sibling, so that the call
// a person approves is the one Claude Code resumes, and it runs.
func TestParallelAsksDeferOneCall(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.writeFile("a.txt", "ALPHA-CONTENT")
	w.writeFile("b.txt", "BRAVO-CONTENT")
	const askReads = `{"version": 1, "default": "allow", "rules": [
	  {"id": "ask-reads", "effect": "ask", "tool": "Read", "reason_code": "needs_review"}]}`
	r := w.run(runArgs{policy: askReads, toolgate: []string{"--on-ask", "defer"},
		script: []modelscript.Step{step(w.readFile("toolu_ra", "a.txt"), w.readFile("toolu_rb", "b.txt")), {Text: "done"}}})
	if r.code != 81 || r.report.Deferred == nil {
		t.Fatalf("exit %d, deferred %+v; want 81 and one deferred call", r.code, r.report.Deferred)
	}
	deferred := r.report.Deferred.ToolUseID
	sibling := map[string]string{"toolu_ra": "toolu_rb", "toolu_rb": "toolu_ra"}[deferred]
	if c := r.call(t, sibling); c.Effect != api.EffectDeny || c.ReasonCode != api.ReasonDeferredSibling {
		t.Errorf("the other call: %+v, want a deny %s", c, api.ReasonDeferredSibling)
	}
	if _, out := w.toolgate("pending"); strings.Count(out, "apr_") != 1 {
		t.Errorf("pending approvals: %s, want the deferred call's alone", out)
	}
	if code, out := w.toolgate("approve", r.report.Deferred.ApprovalID); code != 0 {
		t.Fatalf("approve: %d %s", code, out)
	}
	// The resumed run's report covers the whole session, the sibling's
	// deny included: exit 77.
	code, listed, model := w.resume([]modelscript.Step{{Text: "done"}})
	if code != 77 || len(listed) != 1 || listed[0]["outcome"] != "resumed" {
		t.Fatalf("resume: exit %d %v, want 77", code, listed)
	}
	content := map[string]string{"toolu_ra": "ALPHA-CONTENT", "toolu_rb": "BRAVO-CONTENT"}[deferred]
	if res := model.ToolResults()[deferred]; !strings.Contains(res.Text, content) {
		t.Errorf("the approved call %s did not run on the resume: %+v", deferred, res)
	}
}

// A deferred call is the call in the directory it was proposed in. Claude
// Code's resume proposes it again from the session's directory, not from
// the one the model's cd had moved its Bash tool to, where the approved
// touch would make another file: the proposal is tool_use_id_conflict, and
// the call runs nowhere.
func TestDeferredCallRunsOnlyInItsDirectory(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sub := filepath.Join(w.project, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	r, id := w.deferred(t, []modelscript.Step{step(bash("toolu_cd", "cd sub")), step(bash("toolu_def", "touch deferred.txt"))})
	if code, out := w.toolgate("approve", id); code != 0 {
		t.Fatalf("approve: %d %s", code, out)
	}
	code, listed, model := w.resume([]modelscript.Step{{Text: "done"}})
	if code != 77 || len(listed) != 1 || listed[0]["outcome"] != "resumed" {
		t.Fatalf("resume: exit %d %v, want 77 (the conflict)", code, listed)
	}
	for _, f := range []string{filepath.Join(w.project, "deferred.txt"), filepath.Join(sub, "deferred.txt")} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("the approved call ran, from another directory: %s", f)
		}
	}
	contains(t, "the model's tool_result", model.ToolResults()["toolu_def"].Text, "reason_code tool_use_id_conflict")
	for _, c := range w.audit(r.report.SessionID) {
		if c.ToolUseID == "toolu_def" && (c.Cwd != sub || c.Executions != 0) {
			t.Errorf("the audit of the deferred call: cwd %q, %d executions; want %s, none", c.Cwd, c.Executions, sub)
		}
	}
}

// A deferred approval answers its own session's resume only: another
// session (its policy asks, and nobody is there to answer) that proposes
// the approved tool_use_id with its input gets tool_use_id_conflict, and
// its call does not run; the approval still runs the call, once, on its
// own session's resume.
func TestDeferredApprovalBelongsToItsSession(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const deploy = "touch deferred.txt; echo ran >> runs.txt"
	_, id := w.deferred(t, []modelscript.Step{step(bash("toolu_def", deploy))})
	if code, out := w.toolgate("approve", id); code != 0 {
		t.Fatalf("approve: %d %s", code, out)
	}
	other := w.run(runArgs{policy: deferPolicy, toolgate: []string{"--on-ask", "deny"}, script: []modelscript.Step{step(bash("toolu_def", deploy))}})
	if c := other.call(t, "toolu_def"); c.Effect == "allow" || c.Executed {
		t.Errorf("another session took the approval: %+v", c)
	}
	if other.report.Counts.ByReason[api.ReasonToolUseIDConflict] != 1 || other.code != 77 {
		t.Errorf("the other session: exit %d, counts %+v; want 77 and tool_use_id_conflict", other.code, other.report.Counts)
	}
	if _, err := os.Stat(filepath.Join(w.project, "runs.txt")); err == nil {
		t.Fatal("the other session ran the approved call")
	}
	if code, listed, _ := w.resume([]modelscript.Step{{Text: "done"}}); code != 0 || len(listed) != 1 || listed[0]["outcome"] != "resumed" {
		t.Fatalf("resume: exit %d %v", code, listed)
	}
	if runs, _ := os.ReadFile(filepath.Join(w.project, "runs.txt")); string(runs) != "ran\n" {
		t.Errorf("the approved call ran %q on its session's resume, want once", runs)
	}
}

// decidedSessions runs a deferring session for each file, whose call
// (touch FILE) a person then approves, and returns the files.
func (w *world) decidedSessions(t *testing.T, files ...string) []string {
	t.Helper()
	for i, file := range files {
		_, id := w.deferred(t, []modelscript.Step{step(bash(fmt.Sprintf("toolu_def%d", i), "touch "+file))})
		if code, out := w.toolgate("approve", id); code != 0 {
			t.Fatalf("approve: %d %s", code, out)
		}
	}
	return files
}

// ranAll checks that the approved call of each of decidedSessions' files ran.
func (w *world) ranAll(t *testing.T, files []string) {
	t.Helper()
	for _, file := range files {
		if _, err := os.Stat(filepath.Join(w.project, file)); err != nil {
			t.Errorf("the approved call that makes %s did not run", file)
		}
	}
}

// One toolgate resume takes up every decided session it finds, one after
// another, and reports each: the first one's run does not make the
// resume a gated process for the next.
func TestResumeGoesOnWithEveryDecidedSession(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	files := w.decidedSessions(t, "first.txt", "second.txt")
	code, listed, _ := w.resume([]modelscript.Step{{Text: "done"}, {Text: "done"}})
	if code != 0 || len(listed) != 2 {
		t.Fatalf("resume: exit %d %v, want 0 and both sessions", code, listed)
	}
	for _, l := range listed {
		if l["outcome"] != "resumed" {
			t.Errorf("resume listed %v, want every session resumed", l)
		}
	}
	w.ranAll(t, files)
}

// What a resumed session runs cannot take up the next deferred session
// itself, whatever let the resume go on to it: the model's command runs
// toolgate resume (uncontained, so that the daemon is all that stands in
// its way) and is refused; the person's resume takes up both.
func TestResumedSessionCannotResumeAnother(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	files := w.decidedSessions(t, "first.txt", "second.txt")
	inner := filepath.Join(w.project, "inner.txt")
	// The script is a file of the project, as an allowed program's code
	// is: the guard denies a command line that names toolgate. It drops
	// CLAUDECODE, the variable that tells a process Claude Code started.
	w.writeFile("inner.sh", fmt.Sprintf("env -u CLAUDECODE %s resume --json > %s 2>&1; echo exit $? >> %s\n", toolgateBin, inner, inner))
	const attack = "sh inner.sh"
	// A resumed conversation's next turn is its second: the first resumed
	// session runs the attack (the second proposes the same tool_use_id,
	// which is another session's: denied).
	_, listed, _ := w.resume([]modelscript.Step{{Text: "not asked"}, step(bash("toolu_inner", attack)), {Text: "done"}},
		"--containment", "off")
	said, _ := os.ReadFile(inner)
	if !strings.Contains(string(said), "a gated session cannot resume") || strings.Contains(string(said), `"resumed"`) {
		t.Errorf("the resumed session's toolgate resume said:\n%s", said)
	}
	if len(listed) != 2 || listed[0]["outcome"] != "resumed" || listed[1]["outcome"] != "resumed" {
		t.Errorf("the person's resume: %v, want both sessions resumed by it", listed)
	}
	w.ranAll(t, files)
}

// Stopping toolgate resume (Ctrl-C) while a session it took up runs
// stops there, exit 130, and the decided sessions it had not reached yet
// stay deferred for the next resume.
func TestStoppedResumeLeavesTheRestDeferred(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	files := w.decidedSessions(t, "first.txt", "second.txt")
	// The first resumed session goes on to a long command.
	started := filepath.Join(w.project, "started")
	model, err := modelscript.Start([]modelscript.Step{{Text: "not asked"}, step(bash("toolu_long", "echo > started; sleep 60")), {Text: "done"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	cmd := exec.Command(toolgateBin, "resume", "--json")
	cmd.Env = w.env(model)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, started)
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	var doc struct{ Sessions []map[string]any }
	json.Unmarshal([]byte(out.String()), &doc)
	if code := cmd.ProcessState.ExitCode(); code != 130 || len(doc.Sessions) != 1 {
		t.Errorf("the stopped resume: exit %d, listed %v; want 130 and the one session it stopped in\n%s", code, doc.Sessions, errOut.String())
	}
	code, listed, _ := w.resume([]modelscript.Step{{Text: "not asked"}, {Text: "done"}})
	if code != 0 || len(listed) != 1 || listed[0]["outcome"] != "resumed" {
		t.Fatalf("the next resume: exit %d %v, want the session the stopped one had not reached", code, listed)
	}
	w.ranAll(t, files)
}
