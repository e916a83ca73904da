package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/contain"
	"github.com/toolgate/toolgate/modelscript"
)

const reportPolicy = `{"version": 4, "default": "deny", "rules": [
  {"id": "allow-touch", "effect": "allow", "tool": "Bash", "input": {"command": {"command": [["touch"]]}}},
  {"id": "deny-rm", "effect": "deny", "tool": "Bash", "input": {"command": {"command": [["rm"]]}}, "reason_code": "destructive"},
  {"id": "ask-mkdir", "effect": "ask", "tool": "Bash", "input": {"command": {"command": [["mkdir"]]}}, "reason_code": "needs_review"}
]}`

// The report names its policy and fills in every field, and its counts,
// the summary line and the exit code tell the same story: an allowed call,
// a denied one and an expired ask are 1 allowed, 1 denied, 1 expired
// (never a denial as well), exit 75.
func TestReportEveryField(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	before := time.Now().UTC()
	r := w.run(runArgs{policy: reportPolicy, toolgate: []string{"--approval-timeout", "2s"}, script: []modelscript.Step{
		step(bash("toolu_rep_allow", "touch a.txt")),
		step(bash("toolu_rep_deny", "rm -f a.txt")),
		step(bash("toolu_rep_ask", "mkdir later")),
	}})
	after := time.Now().UTC()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(r.raw, &top); err != nil {
		t.Fatalf("the report: %v\n%s", err, r.raw)
	}
	want := []string{"audit_head", "calls", "claude_exit_code", "containment", "counts", "ended_at", "exit_code", "hook_transport", "policy", "schema_version", "session_id", "started_at"}
	if got := keys(top); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the report's fields: %v, want %v", got, want)
	}
	rep := r.report
	doc, _ := os.ReadFile(r.policyFile)
	sum := sha256.Sum256(doc)
	if rep.Policy.Path != r.policyFile || rep.Policy.Version != 4 || rep.Policy.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("policy: %+v, want %s, version 4, sha256 %x", rep.Policy, r.policyFile, sum)
	}
	if rep.SchemaVersion != 5 || !strings.HasPrefix(rep.SessionID, "ses_") || rep.ClaudeExitCode != 0 || rep.ExitCode != 75 || r.code != 75 {
		t.Errorf("schema %d, session %q, claude %d, exit %d (process %d)", rep.SchemaVersion, rep.SessionID, rep.ClaudeExitCode, rep.ExitCode, r.code)
	}
	if rep.StartedAt.Before(before.Add(-time.Second)) || rep.EndedAt.After(after.Add(time.Second)) || !rep.StartedAt.Before(rep.EndedAt) {
		t.Errorf("started %s, ended %s, the run was between %s and %s", rep.StartedAt, rep.EndedAt, before, after)
	}
	if h := rep.AuditHead; h == nil || h.Seq == 0 || len(h.Hash) != 64 {
		t.Errorf("audit head: %+v", h)
	}
	if rep.Containment.Name != contain.LevelBoundary || rep.Containment.Detail == "" {
		t.Errorf("containment: %+v", rep.Containment)
	}
	n := rep.Counts
	if n.Calls != 3 || n.Allowed != 1 || n.Denied != 1 || n.Expired != 1 || n.Pending != 0 || n.Executed != 1 ||
		len(n.ByReason) != 1 || n.ByReason["destructive"] != 1 {
		t.Errorf("counts: %+v", n)
	}
	contains(t, "the summary", r.stderr, "toolgate: 3 calls: 1 allowed, 1 denied (destructive 1), 1 expired, 1 executed; claude exited 0; exit 75")

	// Every call: what was proposed, what decided it and when, whether it ran.
	var calls []map[string]json.RawMessage
	json.Unmarshal(top["calls"], &calls)
	if len(calls) != 3 {
		t.Fatalf("calls: %s", top["calls"])
	}
	for _, c := range calls {
		for _, k := range []string{"tool_use_id", "session_id", "tool_name", "input", "input_sha256", "proposed_at", "effect", "source", "decided_at", "executed", "executions"} {
			if _, ok := c[k]; !ok {
				t.Errorf("call %s lacks %s", c["tool_use_id"], k)
			}
		}
	}
	checks := []struct{ id, effect, rule, reason, source string }{
		{"toolu_rep_allow", "allow", "allow-touch", "", "policy"},
		{"toolu_rep_deny", "deny", "deny-rm", "destructive", "policy"},
		{"toolu_rep_ask", "deny", "ask-mkdir", "approval_expired", "expiry"},
	}
	for _, want := range checks {
		c := r.call(t, want.id)
		if string(c.Effect) != want.effect || c.RuleID != want.rule || c.ReasonCode != want.reason || c.Source != want.source ||
			c.SessionID != rep.SessionID || c.ToolName != "Bash" || c.DecidedAt == nil || c.ProposedAt.IsZero() {
			t.Errorf("%s: %+v", want.id, c)
		}
		if c.Executed != (want.effect == "allow") {
			t.Errorf("%s: executed %v", want.id, c.Executed)
		}
	}
	if c := r.call(t, "toolu_rep_ask"); !strings.HasPrefix(c.ApprovalID, "apr_") || c.Actor != "system:expiry" {
		t.Errorf("the expired ask: approval %q, actor %q", c.ApprovalID, c.Actor)
	}
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
