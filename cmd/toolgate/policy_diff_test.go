package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/paths"
)

const articleBefore = "../../testdata/diff/protected-branch-before.json"

// recordCalls records calls through a real daemon's gate, as the hook
// does (PreToolUse), in a session of the article's first policy.
func recordCalls(t *testing.T, p paths.Paths, doc string) {
	t.Helper()
	session := register(t, p, doc, time.Hour, "/project")
	c := client.NewClient(p.Socket())
	for id, call := range map[string]string{
		"toolu_docs1":   `"tool_name":"mcp__docs__search","tool_input":{"q":"rate limits"}`,
		"toolu_docs2":   `"tool_name":"mcp__docs__search","tool_input":{"q":"retries"}`,
		"toolu_develop": `"tool_name":"mcp__github__create_pull_request","tool_input":{"base":"develop","head":"x","title":"t"}`,
		"toolu_master":  `"tool_name":"mcp__github__create_pull_request","tool_input":{"base":"master","head":"x","title":"t"}`,
		"toolu_env":     `"tool_name":"Read","tool_input":{"file_path":"/project/.env"}`,
	} {
		ev := json.RawMessage(`{"hook_event_name":"PreToolUse","tool_use_id":"` + id + `",` + call + `}`)
		if _, err := c.Hook(context.Background(), api.HookRequest{SessionID: session, Event: ev}); err != nil {
			t.Fatal(err)
		}
	}
}

// policy diff --history replays the calls the daemon recorded through
// both policies: the docs search loosens (exit 80), the feature base
// tightens, and the export of the same ledger replays the same.
func TestPolicyDiffHistory(t *testing.T) {
	p := useGate(t)
	before := readFile(t, articleBefore)
	recordCalls(t, p, before)

	code, out, errOut := run(t, "", "policy", "diff", articleBefore, protectedBranch, "--history")
	if code != exitLoosens {
		t.Fatalf("exit %d, want %d: %s %s", code, exitLoosens, out, errOut)
	}
	contains(t, out, "5 calls replayed from the daemon's ledger: 3 change effect (2 loosen, 1 tighten); 1 keep it",
		"ask -> allow  2 calls  LOOSENS", "default -> allow-docs-search: 2", "toolu_docs1  mcp__docs__search",
		"allow -> ask  1 call\n", "allow-pr-feature -> default: 1", "+ rule allow-docs-search (allow mcp__docs__search)  LOOSENS")
	if strings.Index(out, "ask -> allow") > strings.Index(out, "allow -> ask") {
		t.Errorf("the loosening change must come first:\n%s", out)
	}
	contains(t, errOut, "loosens the decision on 2 of 5 recorded calls")

	_, daemonJSON, _ := run(t, "", "policy", "diff", articleBefore, protectedBranch, "--history", "--json")
	export := filepath.Join(t.TempDir(), "audit.jsonl")
	if code, _, errOut := run(t, "", "audit", "export", "-o", export); code != 0 {
		t.Fatalf("export: %s", errOut)
	}
	code, fileJSON, _ := run(t, "", "policy", "diff", articleBefore, protectedBranch, "--file", export, "--json")
	var fromDaemon, fromFile diffJSON
	if json.Unmarshal([]byte(daemonJSON), &fromDaemon) != nil || json.Unmarshal([]byte(fileJSON), &fromFile) != nil || code != exitLoosens {
		t.Fatalf("--json: %d\n%s\n%s", code, daemonJSON, fileJSON)
	}
	d, f := fromDaemon.History, fromFile.History
	if fromDaemon.SchemaVersion != 1 || !fromDaemon.Loosens || d.Calls != 5 || d.Loosened != 2 || d.WithoutSession != 0 || f.Source != "file" {
		t.Errorf("the report: %+v", fromDaemon)
	}
	d.Source, d.Path = f.Source, f.Path
	if a, b := mustJSON(t, d), mustJSON(t, f); a != b {
		t.Errorf("the daemon's ledger and its export replay differently:\n%s\n%s", a, b)
	}
}

// Nothing recorded in the window loosens: exit 0, though a rule change
// could; the same policy on both sides changes nothing.
func TestPolicyDiffWindowAndNoChange(t *testing.T) {
	p := useGate(t)
	recordCalls(t, p, readFile(t, articleBefore))
	code, out, _ := run(t, "", "policy", "diff", articleBefore, protectedBranch, "--since", "2999-01-01")
	if code != 0 || !strings.Contains(out, "0 calls replayed") {
		t.Errorf("an empty window: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "", "policy", "diff", protectedBranch, protectedBranch, "--history")
	if code != 0 || !strings.Contains(out, "rules: the same") || !strings.Contains(out, "5 calls replayed") || !strings.Contains(out, ": 0 change effect") {
		t.Errorf("no change: exit %d\n%s", code, out)
	}
}

// Without --history the documents alone decide: a rule that can loosen a
// decision is exit 80; --limit and the arguments are checked.
func TestPolicyDiffRules(t *testing.T) {
	code, out, errOut := run(t, "", "policy", "diff", articleBefore, protectedBranch)
	if code != exitLoosens || !strings.Contains(errOut, "rule allow-docs-search (loosens)") || !strings.Contains(out, `input.base: {"const":"main"} -> {"enum":["main","master"]}`) {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, _ := run(t, "", "policy", "diff", protectedBranch, articleBefore); code != exitLoosens { // the feature bases are allowed again
		t.Errorf("the reverse: exit %d", code)
	}
	const articleDoc = "../../testdata/article/policy.json" // the design article's document, without inline tests
	strict := writeFile(t, "strict.json", strings.Replace(readFile(t, articleDoc), `"default": "ask"`, `"default": "deny"`, 1))
	if code, out, _ := run(t, "", "policy", "diff", articleDoc, strict); code != 0 || !strings.Contains(out, "the default: ask -> deny  tightens") {
		t.Errorf("a stricter default: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{protectedBranch}, {protectedBranch, protectedBranch, "--limit", "-1"}, {protectedBranch, protectedBranch, "--since", "yesterday"}, {protectedBranch, protectedBranch, "--file", "x", "--ledger", "y"}} {
		if code, _, _ := run(t, "", append([]string{"policy", "diff"}, args...)...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	if code, _, _ := run(t, "", "policy", "diff", protectedBranch, protectedBranch, "--file", filepath.Join(t.TempDir(), "none")); code != exitNoInput {
		t.Errorf("a missing export: exit %d", code)
	}
	if code, _, _ := run(t, "", "policy", "diff", protectedBranch, protectedBranch, "--file", protectedBranch); code != exitDataErr {
		t.Errorf("a file that is not an export: exit %d", code)
	}
}

func contains(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("lacks %q:\n%s", sub, s)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
