package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/modelscript"
)

// 7: the same tool_use_id in two turns: the second is denied
// duplicate_tool_use_id and the command ran once.
func TestDuplicateToolUseID(t *testing.T) {
	t.Parallel()
	forTransports(t, func(t *testing.T, transport string) {
		w := newWorld(t)
		twice := bash("toolu_e2e_dup", "echo once | tee -a count.txt")
		policy := `{"version": 1, "default": "deny", "rules": [
		  {"id": "allow-echo-tee", "effect": "allow", "tool": "Bash", "input": {"command": {"command": [["echo"], ["tee", "-a"]]}}}]}`
		r := w.run(runArgs{transport: transport, policy: policy, script: []modelscript.Step{step(twice), step(twice)}})
		if r.code != 77 {
			t.Fatalf("exit %d, want 77", r.code)
		}
		data, _ := os.ReadFile(filepath.Join(w.project, "count.txt"))
		if got := strings.Count(string(data), "once"); got != 1 {
			t.Fatalf("the command ran %d times, want once", got)
		}
		calls := w.audit(r.report.SessionID)
		if len(calls) != 1 || calls[0].Executions != 1 {
			t.Errorf("audit: %+v", calls)
		}
		if n := r.report.Counts.ByReason["duplicate_tool_use_id"]; n != 1 || len(r.report.Calls) != 2 || !r.report.Calls[1].Repeat {
			t.Errorf("the report should list the repeat and its denial: %+v", r.report)
		}
		if len(calls[0].Repeats) != 1 || calls[0].Repeats[0].ReasonCode != "duplicate_tool_use_id" {
			t.Errorf("the audit should show the repeat: %+v", calls[0])
		}
		// What the model saw of the call is its one run's output; the repeat's
		// denial does not replace it, and the plain audit lists the repeat.
		if strings.TrimSpace(calls[0].Seen) != "once" {
			t.Errorf("the audit should keep what the call's run showed the model: %q", calls[0].Seen)
		}
		_, out := w.toolgate("audit", "--session", r.report.SessionID)
		contains(t, "toolgate audit", out, "allow by policy (rule allow-echo-tee)", "model saw: once", "proposed again", "deny duplicate_tool_use_id")
	})
}

// 8: the daemon dies and cannot come back before a call: the call is denied
// gate_unavailable, nothing ran, and run exits 69 (the gate was lost),
// saying why.
func TestDaemonGoneFailsClosed(t *testing.T) {
	t.Parallel()
	forTransports(t, func(t *testing.T, transport string) {
		w := newWorld(t)
		var held *ledger.Ledger
		var once sync.Once
		killDaemon := func() {
			once.Do(func() {
				// Hold the start lock so that run's watcher cannot restart the
				// daemon before the ledger is taken, then take the ledger: a new
				// daemon cannot open it.
				lock, err := os.OpenFile(w.paths().StartLock(), os.O_RDWR|os.O_CREATE, 0o600)
				if err != nil {
					t.Error(err)
					return
				}
				defer lock.Close()
				flock(t, lock)
				st, err := w.client().Status(context.Background())
				if err != nil {
					t.Errorf("status: %v", err)
					return
				}
				p, _ := os.FindProcess(st.PID)
				p.Kill()
				if !waitGone(st.PID, 10*time.Second) {
					t.Error("the daemon did not die")
				}
				// A killed process is a zombie before its last thread has
				// let go of its files: the ledger's lock goes a moment later.
				deadline := time.Now().Add(10 * time.Second)
				for held, err = ledger.Open(w.paths().LedgerDir(), ledger.Options{}); ledger.IsLocked(err) && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
					held, err = ledger.Open(w.paths().LedgerDir(), ledger.Options{})
				}
				if err != nil {
					t.Errorf("take the ledger: %v", err)
				}
			})
		}
		script := []modelscript.Step{
			step(bash("toolu_e2e_before", "touch before.txt")),
			{ToolUses: []modelscript.ToolUse{bash("toolu_e2e_after", "touch after.txt")}, Before: killDaemon},
		}
		r := w.run(runArgs{transport: transport, policy: allowTouchPolicy, script: script})
		defer func() {
			if held != nil {
				held.Close()
			}
		}()
		if r.code != 69 || !strings.Contains(r.report.GateLost, "could not be restarted") {
			t.Fatalf("exit %d (gate lost: %q), want 69 and why", r.code, r.report.GateLost)
		}
		if _, err := os.Stat(filepath.Join(w.project, "before.txt")); err != nil {
			t.Errorf("the first call should have run: %v", err)
		}
		if _, err := os.Stat(filepath.Join(w.project, "after.txt")); err == nil {
			t.Fatal("a call ran while the gate was down")
		}
		if res, ok := r.model.ToolResults()["toolu_e2e_after"]; ok {
			// run stops claude as soon as it finds the gate lost: with http
			// hooks while its listener answers the call, with command hooks
			// when its watcher fails to restart the daemon, which can come
			// before claude sends the deny to the model. What the model
			// saw, if anything, is the deny.
			contains(t, "the model's tool_result", res.Text, "reason_code gate_unavailable")
		}
		if c := r.call(t, "toolu_e2e_after"); c.Effect != "deny" || c.ReasonCode != "gate_unavailable" || c.Executed {
			t.Errorf("report: %+v", c)
		}
		contains(t, "toolgate's stderr", r.stderr, "could not be restarted")
		// Once the ledger is free again, a daemon puts the call denied while it
		// was away into the audit.
		held.Close()
		held = nil
		calls := w.audit(r.report.SessionID)
		found := false
		for _, c := range calls {
			if c.ToolUseID == "toolu_e2e_after" {
				found = c.Effect == "deny" && c.ReasonCode == "gate_unavailable" && !c.Executed
			}
		}
		if !found || len(calls) != 2 {
			t.Errorf("the audit after the daemon's return: %+v", calls)
		}
	})
}

// 9: two runs at once share one daemon and one audit, and neither sees the
// other's session.
func TestTwoRunsShareOneDaemon(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var cmds [2]*exec.Cmd
	var finishes [2]func(*exec.Cmd) result
	for i := range cmds {
		sub := filepath.Join(w.project, []string{"a", "b"}[i])
		os.MkdirAll(sub, 0o700)
		cmds[i], _, finishes[i] = w.start(runArgs{policy: allowTouchPolicy,
			script: []modelscript.Step{step(bash([]string{"toolu_e2e_a", "toolu_e2e_b"}[i], "touch "+sub+"/x"))}})
	}
	var wg sync.WaitGroup
	for _, cmd := range cmds {
		wg.Add(1)
		go func() { defer wg.Done(); cmd.Run() }()
	}
	wg.Wait()
	var results [2]result
	for i := range cmds {
		results[i] = finishes[i](cmds[i])
		if results[i].code != 0 {
			t.Fatalf("run %d exited %d", i, results[i].code)
		}
	}
	a, b := results[0].report.SessionID, results[1].report.SessionID
	if a == b {
		t.Fatal("two runs got one session")
	}
	for i, s := range []string{a, b} {
		calls := w.audit(s)
		want := []string{"toolu_e2e_a", "toolu_e2e_b"}[i]
		if len(calls) != 1 || calls[0].ToolUseID != want || calls[0].SessionID != s {
			t.Errorf("session %s sees %+v, want only %s", s, calls, want)
		}
	}
	log, _ := os.ReadFile(w.paths().LogFile())
	if n := strings.Count(string(log), "daemon listening"); n != 1 {
		t.Errorf("%d daemons started, want 1:\n%s", n, log)
	}
}

// A tool_use_id that ran in one session and comes again in another, with
// its input or another, is denied tool_use_id_conflict (an id is one call
// of one session), and the second session's report and audit say so.
func TestDuplicateAcrossSessions(t *testing.T) {
	t.Parallel()
	forTransports(t, func(t *testing.T, transport string) {
		w := newWorld(t)
		same := []modelscript.Step{step(bash("toolu_e2e_twice", "touch first.txt"))}
		if r := w.run(runArgs{transport: transport, policy: allowTouchPolicy, script: same}); r.code != 0 {
			t.Fatalf("first run: exit %d", r.code)
		}
		again := []modelscript.Step{step(bash("toolu_e2e_twice", "touch first.txt")), step(bash("toolu_e2e_twice", "touch other.txt"))}
		r := w.run(runArgs{transport: transport, policy: allowTouchPolicy, script: again})
		if r.code != 77 {
			t.Fatalf("second run: exit %d, want 77", r.code)
		}
		if r.report.Counts.ByReason["tool_use_id_conflict"] != 2 {
			t.Errorf("the second session's report: %+v", r.report)
		}
		if calls := w.audit(r.report.SessionID); len(calls) != 1 || len(calls[0].Repeats) != 2 {
			t.Errorf("the second session's audit: %+v", calls)
		}
	})
}
