package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/ledger"
)

// exportOf makes a real ledger with a few calls and returns its export.
// (The CLI never opens a ledger: its verify and export go through the
// daemon, which the end-to-end tests cover.)
func exportOf(t *testing.T) string {
	t.Helper()
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 3 {
		p := api.Call{ToolUseID: fmt.Sprintf("toolu_%d", i), SessionID: "s1", ToolName: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}
		if _, _, err := l.Propose(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := l.Export(context.Background(), &buf, api.Incident{}); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// The file's own chain, --offline (against the ledger's record of the
// export, through the daemon: the end-to-end tests).
func TestAuditVerifyFileOffline(t *testing.T) {
	data := exportOf(t)
	export := writeFile(t, "audit.jsonl", data)
	if code, out, errOut := run(t, "", "audit", "verify", "--offline", "--file", export); code != 0 || out != "" || errOut != "" {
		t.Fatalf("verify of a fresh export: %d %q %q", code, out, errOut)
	}
	code, out, _ := run(t, "", "audit", "verify", "--offline", "--file", export, "--json")
	if code != 0 || !strings.Contains(out, `"valid": true`) || !strings.Contains(out, `"events": 3`) {
		t.Fatalf("verify --json: %d %s", code, out)
	}
	tampered := writeFile(t, "tampered.jsonl", strings.Replace(data, `"command":"ls"`, `"command":"rm"`, 1))
	code, _, errOut := run(t, "", "audit", "verify", "--offline", "--file", tampered)
	if code != exitDataErr || !strings.Contains(errOut, "audit chain broken at event 1 (modified)") {
		t.Errorf("tampered export: %d %q", code, errOut)
	}
	code, out, _ = run(t, "", "audit", "verify", "--offline", "--file", tampered, "--json")
	if code != exitDataErr || !strings.Contains(out, `"valid": false`) || !strings.Contains(out, `"problem": "modified"`) {
		t.Errorf("tampered export, --json: %d %s", code, out)
	}
	if code, _, _ := run(t, "", "audit", "verify", "--offline", "--file", filepath.Join(t.TempDir(), "none")); code != exitNoInput {
		t.Errorf("missing file: %d", code)
	}
}

// --anchor: the file must hold the named event with the named hash.
func TestAuditVerifyAnchor(t *testing.T) {
	data := exportOf(t)
	export := writeFile(t, "audit.jsonl", data)
	first := strings.SplitN(data, "\n", 2)[0]
	hash := gjson.Get(first, "hash").String()
	if code, _, errOut := run(t, "", "audit", "verify", "--offline", "--file", export, "--anchor", "1:"+hash); code != 0 {
		t.Errorf("the genuine anchor: %d %s", code, errOut)
	}
	other := strings.Repeat("0", 64)
	if code, _, errOut := run(t, "", "audit", "verify", "--offline", "--file", export, "--anchor", "1:"+other); code != exitDataErr || !strings.Contains(errOut, "(rewritten)") {
		t.Errorf("another hash: %d %s", code, errOut)
	}
	if code, _, errOut := run(t, "", "audit", "verify", "--offline", "--file", export, "--anchor", "99:"+hash); code != exitDataErr || !strings.Contains(errOut, "(truncated)") {
		t.Errorf("an event the file lacks: %d %s", code, errOut)
	}
	if code, _, _ := run(t, "", "audit", "verify", "--offline", "--file", export, "--anchor", "1"); code != exitUsage {
		t.Errorf("a malformed anchor: %d", code)
	}
}
