package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/ledger"
)

// newLedger makes a real ledger with a few calls and closes it.
func newLedger(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ledger")
	l, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		p := ledger.Proposal{ToolUseID: fmt.Sprintf("toolu_%d", i), SessionID: "s1", ToolName: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}
		if _, _, err := l.Propose(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestAuditVerifyAndExport(t *testing.T) {
	dir := newLedger(t)
	if code, out, errOut := run(t, "", "audit", "verify", "--ledger", dir); code != 0 || out != "" || errOut != "" {
		t.Fatalf("verify: %d %q %q", code, out, errOut)
	}
	code, out, _ := run(t, "", "audit", "verify", "--ledger", dir, "--json")
	if code != 0 || !strings.Contains(out, `"valid": true`) || !strings.Contains(out, `"events": 3`) {
		t.Fatalf("verify --json: %d %s", code, out)
	}
	export := filepath.Join(t.TempDir(), "audit.jsonl")
	if code, _, errOut := run(t, "", "audit", "export", "--ledger", dir, "-o", export); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	data, _ := os.ReadFile(export)
	if n := strings.Count(string(data), "\n"); n != 3 {
		t.Fatalf("export has %d lines", n)
	}
	if code, _, _ := run(t, "", "audit", "verify", "--file", export); code != 0 {
		t.Errorf("verify of a fresh export: %d", code)
	}
	tampered := filepath.Join(t.TempDir(), "tampered.jsonl")
	os.WriteFile(tampered, []byte(strings.Replace(string(data), `"command":"ls"`, `"command":"rm"`, 1)), 0o600)
	code, _, errOut := run(t, "", "audit", "verify", "--file", tampered)
	if code != exitDataErr || !strings.Contains(errOut, "audit chain broken at event 1 (modified)") {
		t.Errorf("tampered export: %d %q", code, errOut)
	}
}

func TestAuditWhileTheDaemonHoldsTheLedger(t *testing.T) {
	dir := newLedger(t)
	l, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	code, _, errOut := run(t, "", "audit", "verify", "--ledger", dir)
	if code != exitUnavailable || !strings.Contains(errOut, "in use by another process") || !strings.Contains(errOut, "Try: stop the daemon") {
		t.Errorf("held ledger: %d %q", code, errOut)
	}
	if code, _, _ := run(t, "", "audit", "export", "--ledger", filepath.Join(t.TempDir(), "none")); code != exitNoInput {
		t.Errorf("missing ledger: %d", code)
	}
}
