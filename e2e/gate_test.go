package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/modelscript"
)

const allowTouchPolicy = `{"version": 1, "default": "deny", "rules": [
  {"id": "allow-touch", "effect": "allow", "tool": "Bash", "input": {"command": {"command": [["touch"], ["echo"]]}}},
  {"id": "deny-rm", "effect": "deny", "tool": "Bash", "input": {"command": {"command": [["rm"]]}}, "reason_code": "destructive"}
]}`

// 1: an allowed Bash call runs once; the audit shows proposed -> allow
// (rule) -> executed.
func TestAllowedBashRunsOnce(t *testing.T) {
	t.Parallel()
	forTransports(t, func(t *testing.T, transport string) {
		w := newWorld(t)
		r := w.run(runArgs{transport: transport, policy: allowTouchPolicy, script: []modelscript.Step{step(bash("toolu_e2e_touch", "touch made.txt"))}})
		if r.code != 0 {
			t.Fatalf("exit %d, want 0", r.code)
		}
		if _, err := os.Stat(filepath.Join(w.project, "made.txt")); err != nil {
			t.Errorf("the allowed command did not run: %v", err)
		}
		c := r.call(t, "toolu_e2e_touch")
		if c.Effect != "allow" || c.RuleID != "allow-touch" || c.Source != "policy" || !c.Executed {
			t.Errorf("report: %+v", c)
		}
		if res := r.saw(t, "toolu_e2e_touch"); res.IsError {
			t.Errorf("the model saw an error: %q", res.Text)
		}
		calls := w.audit(r.report.SessionID)
		if len(calls) != 1 || calls[0].Effect != "allow" || calls[0].RuleID != "allow-touch" || !calls[0].Executed || calls[0].Executions != 1 {
			t.Errorf("audit: %+v", calls)
		}
		if r.report.Counts.Allowed != 1 || r.report.Counts.Executed != 1 || r.report.SchemaVersion != 5 {
			t.Errorf("counts: %+v", r.report.Counts)
		}
	})
}

// 2: a deny rule on Bash: not run, the model's tool_result names the rule
// and the reason_code, exit 77.
func TestDeniedBash(t *testing.T) {
	t.Parallel()
	forTransports(t, func(t *testing.T, transport string) {
		w := newWorld(t)
		keep := w.writeFile("keep.txt", "precious")
		r := w.run(runArgs{transport: transport, policy: allowTouchPolicy, script: []modelscript.Step{step(bash("toolu_e2e_rm", "rm -f keep.txt"))}})
		if r.code != 77 {
			t.Fatalf("exit %d, want 77", r.code)
		}
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("the denied command ran: %v", err)
		}
		res := r.saw(t, "toolu_e2e_rm")
		if !res.IsError {
			t.Errorf("a denial should be an error tool_result")
		}
		contains(t, "the model's tool_result", res.Text, "rule deny-rm", "reason_code destructive", "Do not retry")
		for _, leak := range []string{w.runtime, "gate.sock", "toolgate-hook", hookBin} {
			if strings.Contains(res.Text, leak) {
				t.Errorf("the model's tool_result leaks %q: %s", leak, res.Text)
			}
		}
		c := r.call(t, "toolu_e2e_rm")
		if c.Effect != "deny" || c.ReasonCode != "destructive" || c.Executed {
			t.Errorf("report: %+v", c)
		}
	})
}

// 3: a Read of .env inside the project, which the CLI would auto-allow, is
// denied by the hook.
func TestEnvReadInProjectIsDenied(t *testing.T) {
	t.Parallel()
	forTransports(t, func(t *testing.T, transport string) {
		w := newWorld(t)
		w.writeFile(".env", "API_KEY=very-secret-value")
		policy := `{"version": 1, "default": "allow", "rules": [
		  {"id": "deny-env", "effect": "deny", "tool": "Read", "input": {"file_path": {"const": ".env"}}, "reason_code": "secret_file"}]}`
		read := modelscript.ToolUse{ID: "toolu_e2e_env", Name: "Read", Input: map[string]string{"file_path": filepath.Join(w.project, ".env")}}
		r := w.run(runArgs{transport: transport, policy: policy, script: []modelscript.Step{step(read)}})
		if r.code != 77 {
			t.Fatalf("exit %d, want 77", r.code)
		}
		res := r.saw(t, "toolu_e2e_env")
		if strings.Contains(res.Text, "very-secret-value") {
			t.Fatalf("the secret reached the model: %s", res.Text)
		}
		contains(t, "the model's tool_result", res.Text, "rule deny-env", "reason_code secret_file")
		if c := r.call(t, "toolu_e2e_env"); c.Executed || c.RuleID != "deny-env" {
			t.Errorf("report: %+v", c)
		}
	})
}

// 4: an ask rule on a Read inside the project (which Claude Code would
// allow by itself) asks; in a fully unattended run (--on-ask deny) the
// call is denied no_approver and does not run.
func TestUnattendedAskIsDeniedNoApprover(t *testing.T) {
	t.Parallel()
	forTransports(t, func(t *testing.T, transport string) {
		w := newWorld(t)
		w.writeFile("notes.txt", "hello")
		policy := `{"version": 1, "default": "allow", "rules": [
		  {"id": "ask-notes", "effect": "ask", "tool": "Read", "input": {"file_path": {"path_under": "."}}, "reason_code": "needs_review"}]}`
		read := modelscript.ToolUse{ID: "toolu_e2e_ask", Name: "Read", Input: map[string]string{"file_path": filepath.Join(w.project, "notes.txt")}}
		r := w.run(runArgs{transport: transport, policy: policy, script: []modelscript.Step{step(read)}, toolgate: []string{"--on-ask", "deny"}})
		if r.code != 77 {
			t.Fatalf("exit %d, want 77", r.code)
		}
		res := r.saw(t, "toolu_e2e_ask")
		contains(t, "the model's tool_result", res.Text, "rule ask-notes", "reason_code no_approver")
		c := r.call(t, "toolu_e2e_ask")
		if c.Effect != "deny" || c.ReasonCode != "no_approver" || c.Source != "gate" || c.Executed {
			t.Errorf("report: %+v", c)
		}
		if len(r.claude.PermissionDenials) != 1 {
			t.Errorf("the prompt tool's deny should be in claude's permission_denials: %+v", r.claude)
		}
	})
}
