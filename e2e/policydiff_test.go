package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/modelscript"
)

const (
	diffOldPolicy = `{"version": 1, "default": "allow", "rules": [
  {"id": "deny-env", "effect": "deny", "tool": "Read", "input": {"file_path": {"const": ".env"}}, "reason_code": "secret_file"},
  {"id": "deny-rm", "effect": "deny", "tool": "Bash", "input": {"command": {"command": [["rm"]]}}, "reason_code": "destructive"}
]}`
	diffNewPolicy = `{"version": 2, "default": "allow", "rules": [
  {"id": "deny-rm", "effect": "deny", "tool": "Bash", "input": {"command": {"command": [["rm"]]}}, "reason_code": "destructive"},
  {"id": "deny-touch", "effect": "deny", "tool": "Bash", "input": {"command": {"command": [["touch"]]}}, "reason_code": "no_new_files"}
]}`
)

// policy diff --history replays the calls a real claude session made:
// the read of the project's .env, denied because the session ran in the
// project (deny-env's ".env" is relative), would now be allowed, which
// loosens (exit 80); the touch would now be denied; rm stays denied. The
// daemon's ledger, its export and the ledger opened by a private daemon
// once the first is gone replay alike.
func TestPolicyDiffReplaysARealSession(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.writeFile(".env", "SECRET=1")
	env := modelscript.ToolUse{ID: "toolu_e2e_pd_env", Name: "Read", Input: map[string]string{"file_path": filepath.Join(w.project, ".env")}}
	r := w.run(runArgs{policy: diffOldPolicy, script: []modelscript.Step{step(env),
		step(bash("toolu_e2e_pd_touch", "touch a.txt")), step(bash("toolu_e2e_pd_rm", "rm -f a.txt"))}})
	if r.code != 77 || r.call(t, "toolu_e2e_pd_env").RuleID != "deny-env" {
		t.Fatalf("the session: exit %d, %+v", r.code, r.report.Calls)
	}
	oldFile, newFile := w.writeFile("old.json", diffOldPolicy), w.writeFile("new.json", diffNewPolicy)

	code, out := w.toolgate("policy", "diff", oldFile, newFile, "--history")
	if code != 80 {
		t.Fatalf("exit %d, want 80:\n%s", code, out)
	}
	contains(t, "policy diff --history", out, "3 calls replayed from the daemon's ledger: 2 change effect (1 loosen, 1 tighten)",
		"deny -> allow  1 call  LOOSENS", "deny-env -> default: 1", "toolu_e2e_pd_env  Read",
		"allow -> deny  1 call", "default -> deny-touch: 1", "toolu_e2e_pd_touch  Bash", "loosens the decision on 1 of 3 recorded calls")

	export := filepath.Join(t.TempDir(), "audit.jsonl")
	if code, out := w.toolgate("audit", "export", "-o", export); code != 0 {
		t.Fatalf("export: %d %s", code, out)
	}
	fromDaemon := historyJSON(t, w, oldFile, newFile, "--history")
	if fromFile := historyJSON(t, w, oldFile, newFile, "--file", export); fromFile != fromDaemon {
		t.Errorf("the export replays differently:\n%s\n%s", fromDaemon, fromFile)
	}
	w.stopDaemon()
	other := newWorld(t)
	ledger := filepath.Join(w.root, "state", "toolgate", "ledger")
	if fromLedger := historyJSON(t, other, oldFile, newFile, "--ledger", ledger); fromLedger != fromDaemon {
		t.Errorf("the ledger replays differently through a private daemon:\n%s\n%s", fromDaemon, fromLedger)
	}
	if _, err := other.client().Status(t.Context()); err == nil {
		t.Errorf("the other world's own daemon was started for a --ledger replay")
	}
}

// historyJSON is policy diff --json's replay, without where it came from.
func historyJSON(t *testing.T, w *world, oldFile, newFile string, args ...string) string {
	t.Helper()
	code, out := w.toolgateOut(append([]string{"policy", "diff", oldFile, newFile, "--json"}, args...)...)
	var report struct {
		History map[string]json.RawMessage `json:"history"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil || code != 80 {
		t.Fatalf("policy diff --json %s: exit %d, %v: %s", strings.Join(args, " "), code, err, out)
	}
	delete(report.History, "source")
	delete(report.History, "path")
	data, _ := json.Marshal(report.History)
	if !strings.Contains(string(data), `"calls":3`) || strings.Contains(string(data), `"without_session":1`) {
		t.Errorf("replay %s: %s", strings.Join(args, " "), data)
	}
	return string(data)
}
