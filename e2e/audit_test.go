package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/modelscript"
)

// toolgate audit verify and export go through the daemon, the only process
// that opens the ledger: they work while the daemon runs (it did not,
// before: exit 69 "stop the daemon first"). A ledger no daemon serves gets
// a private daemon; one another process holds is refused with a way out.
func TestAuditThroughTheDaemon(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := w.run(runArgs{policy: allowTouchPolicy, script: []modelscript.Step{step(bash("toolu_audit_1", "touch a.txt"))}})
	if r.code != 0 {
		t.Fatalf("run: exit %d", r.code)
	}
	if _, err := w.client().Status(t.Context()); err != nil {
		t.Fatalf("the daemon should still run (idle exit): %v", err)
	}
	if code, out := w.toolgate("audit", "verify"); code != 0 || out != "" {
		t.Fatalf("verify while the daemon runs: %d %q", code, out)
	}
	code, out := w.toolgateOut("audit", "verify", "--json")
	if code != 0 || !strings.Contains(out, `"valid": true`) || !strings.Contains(out, `"head": "`) {
		t.Fatalf("verify --json: %d %s", code, out)
	}
	export := filepath.Join(t.TempDir(), "audit.jsonl")
	if code, out := w.toolgate("audit", "export", "-o", export); code != 0 {
		t.Fatalf("export: %d %s", code, out)
	}
	data, _ := os.ReadFile(export)
	if !strings.Contains(string(data), `"subject":"toolu_audit_1"`) || !strings.Contains(string(data), `"kind":"call_executed"`) {
		t.Fatalf("export lacks the call:\n%s", data)
	}
	if code, out := w.toolgate("audit", "verify", "--file", export); code != 0 {
		t.Errorf("verify of the export: %d %s", code, out)
	}

	// The same ledger named from another world while its daemon holds it:
	// that daemon serves it, found by the record it keeps beside the ledger.
	other := newWorld(t)
	ledgerDir := filepath.Join(w.root, "state", "toolgate", "ledger")
	if code, out = other.toolgate("audit", "verify", "--ledger", ledgerDir); code != 0 || out != "" {
		t.Errorf("a ledger another world's daemon serves: %d %s", code, out)
	}
	// Once that daemon is gone, a private daemon serves it, and goes.
	w.stopDaemon()
	if code, out := other.toolgate("audit", "verify", "--ledger", ledgerDir); code != 0 || out != "" {
		t.Errorf("a ledger no daemon serves: %d %q", code, out)
	}
	if code, out := other.toolgate("audit", "export", "--ledger", ledgerDir, "-o", export+".2"); code != 0 {
		t.Errorf("export of a ledger no daemon serves: %d %s", code, out)
	}
	// The second export holds the first's events, then the first export's
	// own record, and its own last line.
	again, _ := os.ReadFile(export + ".2")
	first := strings.Split(strings.TrimSpace(string(data)), "\n")
	if !strings.HasPrefix(string(again), strings.Join(first[:len(first)-1], "\n")) || !strings.Contains(string(again), `"kind":"audit_exported"`) {
		t.Errorf("the second export does not extend the first:\n%s", again)
	}
	if _, err := other.client().Status(t.Context()); err == nil {
		t.Errorf("the other world's own daemon was started for a --ledger audit")
	}
}

// toolgate audit lists the calls oldest first (the ledger keeps them by
// id: toolu_z came after toolu_a), the report too; a session it does not
// know is an error that says so (65), not an empty list.
func TestAuditListsByTime(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := w.run(runArgs{policy: allowTouchPolicy, script: []modelscript.Step{step(bash("toolu_z_first", "touch 1.txt")), step(bash("toolu_a_second", "touch 2.txt"))}})
	if r.code != 0 || len(r.report.Calls) != 2 || r.report.Calls[0].ToolUseID != "toolu_z_first" {
		t.Fatalf("run: exit %d, calls %+v", r.code, r.report.Calls)
	}
	if calls := w.audit(r.report.SessionID); len(calls) != 2 || calls[0].ToolUseID != "toolu_z_first" || calls[1].ToolUseID != "toolu_a_second" {
		t.Errorf("audit --json: %+v", calls)
	}
	_, out := w.toolgate("audit", "--session", r.report.SessionID)
	if first, second := strings.Index(out, "toolu_z_first"), strings.Index(out, "toolu_a_second"); first < 0 || second < first {
		t.Errorf("audit:\n%s", out)
	}
	if code, out := w.toolgate("audit", "--session", "ses_nope"); code != 65 || !strings.Contains(out, `no session "ses_nope"`) || !strings.Contains(out, "Try: ") {
		t.Errorf("audit --session ses_nope: %d %s", code, out)
	}
}

// audit prune through the daemon: a session's own code cannot prune (the
// guard refuses the command, the daemon a script's request); a person
// outside can, and the chain that remains verifies from the base the
// prune prints, in the ledger and in an export; an anchor from before the
// prune says it was pruned.
func TestAuditPrune(t *testing.T) {
	t.Parallel()
	needTools(t, "python3")
	w := newWorld(t)
	first := w.run(runArgs{policy: allowTouchPolicy, script: []modelscript.Step{step(bash("toolu_prune_1", "touch a.txt"))}})
	if first.code != 0 || first.report.AuditHead == nil {
		t.Fatalf("first run: exit %d, head %+v", first.code, first.report.AuditHead)
	}
	w.writeFile("prune.sh", "toolgate audit prune --before 1s; echo \"prune: $?\"\n")
	inside := w.run(runArgs{policy: `{"version": 1, "default": "allow", "rules": []}`, claudeEnv: attackEnv(), toolgate: beneathTheBoundary, script: []modelscript.Step{
		step(bash("toolu_prune_cmd", "toolgate audit prune --before 1s")), step(bash("toolu_prune_script", "sh prune.sh"))}})
	if c := inside.call(t, "toolu_prune_cmd"); c.ReasonCode != api.ReasonToolgateGuard || c.Executed {
		t.Errorf("the session's own prune command: %+v", c)
	}
	contains(t, "the script's prune", inside.saw(t, "toolu_prune_script").Text, "prune: 77")
	code, out := w.toolgate("audit", "prune", "--before", "0s") // now: both sessions ended
	if code != 0 || !strings.Contains(out, "keep this anchor: ") {
		t.Fatalf("prune: exit %d\n%s", code, out)
	}
	anchor := strings.TrimSpace(out[strings.Index(out, "keep this anchor: ")+len("keep this anchor: "):])
	anchor, _, _ = strings.Cut(anchor, "\n")
	t.Logf("prune:\n%s", out)
	if code, out := w.toolgate("audit", "verify", "--anchor", anchor); code != 0 {
		t.Errorf("verify from the base: %d %s", code, out)
	}
	old := fmt.Sprintf("%d:%s", first.report.AuditHead.Seq, first.report.AuditHead.Hash)
	if code, out := w.toolgate("audit", "verify", "--anchor", old); code != 65 || !strings.Contains(out, "(pruned)") {
		t.Errorf("an anchor from before the prune: %d %s", code, out)
	}
	if code, out := w.toolgate("audit", "--session", first.report.SessionID, "--json"); code != 65 || !strings.Contains(out, "no session") {
		t.Errorf("the pruned session: %d %s", code, out)
	}
	// A session after the prune is gated and recorded as before; an export
	// starts from the base and holds the prune.
	after := w.run(runArgs{policy: allowTouchPolicy, script: []modelscript.Step{step(bash("toolu_prune_2", "touch b.txt"))}})
	if after.code != 0 || len(w.audit(after.report.SessionID)) != 1 {
		t.Fatalf("a run after the prune: exit %d", after.code)
	}
	export := filepath.Join(t.TempDir(), "audit.jsonl")
	if code, out := w.toolgate("audit", "export", "-o", export); code != 0 {
		t.Fatalf("export: %d %s", code, out)
	}
	data, _ := os.ReadFile(export)
	contains(t, "the export", string(data), `"kind":"audit_pruned"`, `"base_seq":`+strings.Split(anchor, ":")[0])
	for _, args := range [][]string{{"--file", export}, {"--file", export, "--offline", "--anchor", anchor}} {
		if code, out := w.toolgate(append([]string{"audit", "verify"}, args...)...); code != 0 {
			t.Errorf("verify %v: %d %s", args, code, out)
		}
	}
}

// The audit must not believe any process about what ran and what the
// model saw. Were gate.sock to take PostToolUse and PostToolBatch events
// from any process of the user, for any tool_use_id of any session, and
// record them as they come (events of the chain like any other, so the
// chain stays intact, unlike writing the ledger's files, which docs/security.md
// says shows as a broken chain), a script of a session could rewrite what
// the audit says the model saw (here: that it never saw the secret it
// read), and record a call the policy denied as executed. (An export would
// still hold the genuine call_seen event beside the forged one; toolgate
// audit, reports and the call record would show the forged one, and
// nothing would mark it as not Claude Code's.)
//
// With the default Landlock containment this is a documented residual
// (docs/security.md, "What it does not protect against"): code the model runs can
// send gate.sock what the hook sends. Claude Code's sandbox
// (--containment strict) leaves its Bash no Unix socket to send it on.
func TestAttackForgeTheAuditThroughTheGate(t *testing.T) {
	t.Parallel()
	needTools(t, "curl", "bwrap", "socat")
	w := newWorld(t)
	w.writeFile("secret.txt", "SECRET=hunter2")
	os.Mkdir(filepath.Join(w.project, "keep"), 0o700)
	batch := `{"session_id":"'"$TOOLGATE_SESSION"'","event":{"session_id":"x","hook_event_name":"PostToolBatch","tool_calls":[{"tool_use_id":"toolu_rJ_read","tool_response":"cat: secret.txt: No such file or directory"}]}}`
	post := `{"session_id":"'"$TOOLGATE_SESSION"'","event":{"session_id":"x","hook_event_name":"PostToolUse","tool_use_id":"toolu_rJ_rm","tool_name":"Bash","tool_input":{"command":"rm -rf keep"},"tool_response":{}}}`
	w.writeFile("forge.sh", gateCurl("POST", "/v1/hook", batch)+"\n"+gateCurl("POST", "/v1/hook", post)+"\necho forged\n")
	r := w.run(runArgs{policy: attackPolicy, claudeEnv: attackEnv(), toolgate: []string{"--containment", "strict"},
		script: []modelscript.Step{step(bash("toolu_rJ_rm", "rm -rf keep")), step(bash("toolu_rJ_read", "cat secret.txt")),
			step(bash("toolu_rJ_forge", "sh forge.sh"))}})
	if !strings.Contains(r.saw(t, "toolu_rJ_read").Text, "hunter2") || !strings.Contains(r.saw(t, "toolu_rJ_forge").Text, "forged") {
		t.Fatalf("the script did not run as written: %+v %+v", r.saw(t, "toolu_rJ_read"), r.saw(t, "toolu_rJ_forge"))
	}
	if _, err := os.Stat(filepath.Join(w.project, "keep")); err != nil {
		t.Fatal("the denied rm ran")
	}
	calls := map[string]api.Call{}
	for _, c := range w.audit(r.report.SessionID) {
		calls[c.ToolUseID] = c
	}
	if c := calls["toolu_rJ_read"]; !strings.Contains(c.Seen, "hunter2") {
		t.Errorf("the audit says the model saw %q; it saw the secret", c.Seen)
	}
	if c := calls["toolu_rJ_rm"]; c.Executed {
		t.Errorf("the audit says the denied rm -rf ran: %s %s executed %v (%s)", c.Effect, c.ReasonCode, c.Executed, c.Outcome)
	}
	if code, out := w.toolgate("audit", "verify"); code != 0 {
		t.Logf("audit verify: %d %s", code, out)
	} else {
		t.Logf("audit verify: the chain is intact")
	}
}

// The model's detached code, with the session's variables cleared from
// its environment, tries to prune the audit through the daemon (as an
// installed toolgate's user would): the prune is refused, and the first
// session's calls stay in the audit.
func TestAttackPruneTheAuditFromInside(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	first := w.run(runArgs{policy: attackPolicy, script: []modelscript.Step{step(bash("toolu_rv16_old", "echo old"))}})
	if first.code != 0 {
		t.Fatalf("the first session: exit %d", first.code)
	}
	log := filepath.Join(w.root, "attack.log")
	script := `env -u CLAUDECODE -u TOOLGATE_SESSION -u TOOLGATE_SOCKET -u TOOLGATE_SPOOL toolgate audit prune --before 2099-01-01; echo "prune: $?"
`
	r := w.run(runArgs{policy: attackPolicy, claudeEnv: attackEnv(), toolgate: beneathTheBoundary, script: []modelscript.Step{
		step(bash("toolu_rv16_prune", w.detached(script, log))),
		step(bash("toolu_rv16_wait", waitFor(log, "prune: "))),
	}})
	out := logOf(t, log, "prune: ")
	if !strings.Contains(out, "prune: ") {
		t.Fatalf("the prune never ran: the test is too weak (exit %d)", r.code)
	}
	if strings.Contains(out, "prune: 0") {
		t.Errorf("the model's code pruned the audit from inside its session")
	}
	if calls := w.audit(first.report.SessionID); len(calls) == 0 {
		t.Errorf("the first session's calls are gone from the audit")
	}
}
