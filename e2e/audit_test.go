package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/modelscript"
)

// toolgate audit verify and export go through the daemon, the only process
// that opens the ledger: they work while the daemon runs (it did not,
// before: exit 69 "stop the daemon first"). A ledger no daemon serves gets
// a private daemon; one another process holds is refused with a way out.
func TestAuditThroughTheDaemon(t *testing.T) {
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
