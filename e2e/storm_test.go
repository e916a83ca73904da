package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/modelscript"
)

const stormPolicy = `{"version": 1, "default": "deny", "rules": [
  {"id": "allow-ls", "effect": "allow", "tool": "Bash", "input": {"command": {"command": [["ls"], ["echo"], ["tee"]]}}},
  {"id": "ask-push", "effect": "ask", "tool": "Bash", "input": {"command": {"command": [["git", "push"]]}}, "reason_code": "publishes"}
]}`

// TestCrashStorm drives more than 1,000 gated calls from several sessions
// (real hook processes against the real daemon, and the real CLI under
// toolgate run for one more) while the daemon is SIGKILLed at random
// moments, at least 10 times, and restarted. Afterwards: every call a hook
// answered is in the audit, no tool_use_id ran twice, nothing ran without a
// recorded allow, every pending approval kept its expiry, and the audit
// chain verifies.
func TestCrashStorm(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	env := w.env(nil)
	start := func() *exec.Cmd {
		cmd := exec.Command(toolgateBin, "serve")
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			st, err := w.client().Status(context.Background())
			if err == nil && st.PID == cmd.Process.Pid {
				return cmd
			}
			if err == nil || time.Now().After(deadline) { // another daemon (run's) won the race, or none came
				cmd.Wait()
				return nil
			}
			time.Sleep(10 * time.Millisecond) // the daemon is opening its ledger
		}
	}
	daemon := start()
	const sessions, perSession = 4, 260
	ctx := context.Background()
	gate := w.client()
	ids := make([]string, sessions)
	for s := range ids {
		sess, err := gate.Register(ctx, api.RegisterRequest{Policy: json.RawMessage(stormPolicy), PolicyName: "storm",
			Cwd: w.project, SupervisorPID: os.Getpid(), ApprovalTimeout: api.Duration(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		ids[s] = sess.ID
	}
	// Pending approvals that must survive every crash with their expiry.
	approvals := map[string]time.Time{}
	for i := range 5 {
		id := fmt.Sprintf("toolu_storm_ask_%d", i)
		input := json.RawMessage(`{"command":"git push origin main"}`)
		event := `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":` + string(input) + `,"tool_use_id":"` + id + `"}`
		if _, err := gate.Hook(ctx, api.HookRequest{SessionID: ids[0], Event: json.RawMessage(event)}); err != nil {
			t.Fatal(err)
		}
		v, err := gate.Prompt(ctx, api.PromptRequest{SessionID: ids[0], ToolName: "Bash", ToolUseID: id, Input: input})
		if err != nil || v.Effect != "ask" {
			t.Fatalf("ask: %+v %v", v, err)
		}
		approvals[v.ApprovalID] = *v.ExpiresAt
	}

	stop := make(chan struct{})
	var kills atomic.Int32
	var killerDone sync.WaitGroup
	killerDone.Add(1)
	go func() { // the storm
		defer killerDone.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(150+rand.IntN(400)) * time.Millisecond):
			}
			st, err := gate.Status(ctx)
			if err != nil {
				continue
			}
			if p, err := os.FindProcess(st.PID); err == nil && p.Kill() == nil {
				kills.Add(1)
				waitGone(st.PID, 10*time.Second)
				if daemon != nil && daemon.Process.Pid == st.PID {
					daemon.Wait()
				}
			}
			daemon = start()
		}
	}()

	// One session with the real CLI under toolgate run, in the storm too.
	var script []modelscript.Step
	for i := range 30 {
		script = append(script, step(bash(fmt.Sprintf("toolu_storm_cli_%02d", i), fmt.Sprintf("echo %d | tee -a cli.txt", i))))
	}
	cliDone := make(chan result, 1)
	go func() { cliDone <- w.run(runArgs{policy: stormPolicy, script: script}) }()

	type outcome struct{ effect, reason string }
	answered := make([]map[string]outcome, sessions)
	executed := make([]map[string]int, sessions)
	var wg sync.WaitGroup
	for s := range sessions {
		answered[s], executed[s] = map[string]outcome{}, map[string]int{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			hookEnv := append(append([]string{}, env...), "TOOLGATE_SESSION="+ids[s], "TOOLGATE_SOCKET="+w.paths().Socket(),
				"TOOLGATE_SPOOL="+w.paths().SpoolFile(ids[s]))
			for i := range perSession {
				id := fmt.Sprintf("toolu_storm_%d_%03d", s, i)
				command := []string{"ls -la", "echo hi", "rm -rf /tmp/x"}[i%3]
				pre := fmt.Sprintf(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":%q},"tool_use_id":%q}`, command, id)
				d := runHook(t, hookEnv, pre)
				answered[s][id] = outcome{d.Get("permissionDecision").String(), reasonCode(d.Get("permissionDecisionReason").String())}
				if d.Get("permissionDecision").String() == "allow" { // the CLI runs it, once
					executed[s][id]++
					post := fmt.Sprintf(`{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":%q},"tool_use_id":%q,"tool_response":{}}`, command, id)
					runHook(t, hookEnv, post)
				}
			}
		}()
	}
	wg.Wait()
	cli := <-cliDone
	for kills.Load() < 10 {
		time.Sleep(50 * time.Millisecond) // the storm goes on until it has killed 10 times
	}
	close(stop)
	killerDone.Wait()
	if _, err := gate.Status(ctx); err != nil {
		start() // the last kill may have left none; a daemon started by toolgate run's watcher also does
	}
	if _, err := gate.Status(ctx); err != nil {
		t.Fatalf("no daemon after the storm: %v", err)
	}

	total, unavailable, inAudit := 0, 0, 0
	for s, sid := range ids {
		calls, err := gate.SessionCalls(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]api.Call{}
		for _, c := range calls {
			byID[c.ToolUseID] = c
			if c.Executions > 1 {
				t.Errorf("%s ran %d times", c.ToolUseID, c.Executions)
			}
			if c.Executed && c.Effect != "allow" {
				t.Errorf("%s ran without a recorded allow: %+v", c.ToolUseID, c)
			}
		}
		for id, o := range answered[s] {
			total++
			if o.reason == "gate_unavailable" {
				unavailable++
			}
			c, ok := byID[id]
			if !ok {
				t.Errorf("%s was answered %s (%s) but is not in the audit", id, o.effect, o.reason)
				continue
			}
			inAudit++
			if o.effect == "allow" && c.Effect != "allow" {
				t.Errorf("%s was allowed but the audit says %+v", id, c)
			}
		}
	}
	cliCalls, _ := gate.SessionCalls(ctx, cli.report.SessionID)
	for _, c := range cliCalls {
		if c.Executions > 1 || c.Executed && c.Effect != "allow" {
			t.Errorf("CLI session: %+v", c)
		}
	}
	approver := client.NewClient(w.paths().ApproveSocket())
	for id, exp := range approvals {
		d, err := approver.Approval(ctx, id)
		if err != nil || d.Approval.Status != "pending" || !d.Approval.ExpiresAt.Equal(exp) {
			t.Errorf("approval %s after the storm: %+v %v (expiry was %s)", id, d.Approval, err, exp)
		}
	}
	w.stopDaemon()
	if daemon != nil {
		daemon.Wait()
	}
	verify := exec.Command(toolgateBin, "audit", "verify", "--json")
	verify.Env = env
	out, err := verify.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"valid": true`) {
		t.Errorf("toolgate audit verify: %v %s", err, out)
	}
	t.Logf("crash storm: %d daemon kills; %d hook calls (%d denied gate_unavailable while it was down), %d in the audit; "+
		"the CLI session made %d calls (exit %d); %d approvals kept their expiry; %s",
		kills.Load(), total, unavailable, inAudit, len(cliCalls), cli.code, len(approvals), strings.TrimSpace(string(out)))
}

// runHook runs the real hook with an event and returns its decision.
func runHook(t *testing.T, env []string, event string) gjsonResult {
	cmd := exec.Command(hookBin)
	cmd.Env, cmd.Stdin = env, strings.NewReader(event)
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("hook: %v", err)
	}
	return gjsonGet(string(out), "hookSpecificOutput")
}

// reasonCode picks the reason_code out of a denial message.
func reasonCode(msg string) string {
	_, rest, ok := strings.Cut(msg, "reason_code ")
	if !ok {
		return ""
	}
	return strings.TrimRight(strings.Fields(rest)[0], "),:")
}
