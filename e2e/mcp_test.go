package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/modelscript"
)

// fixtureConfig is the --mcp-config of the user's MCP server fixture: this
// test binary, serving on stdio.
func fixtureConfig(t *testing.T, w *world, env ...string) (config, log string) {
	t.Helper()
	log = filepath.Join(w.root, "fixture.log")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{fixtureEnv: "1", "FIXTURE_LOG": log}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"gh": map[string]any{
		"type": "stdio", "command": self, "env": vars}}})
	return string(b), log
}

func fixtureCalls(t *testing.T, log string) string {
	data, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(data)
}

const allowAllPolicy = `{"version": 1, "default": "allow", "rules": []}`

// 5: an MCP call whose input violates the tool's published schema is denied
// schema_invalid, and the fixture server is never called; a valid one runs.
func TestMCPSchemaInvalid(t *testing.T) {
	t.Parallel()
	forTransports(t, func(t *testing.T, transport string) {
		w := newWorld(t)
		config, log := fixtureConfig(t, w)
		bad := modelscript.ToolUse{ID: "toolu_e2e_badpr", Name: "mcp__gh__create_pull_request", Input: map[string]any{"base": 5, "head": "feat"}}
		good := modelscript.ToolUse{ID: "toolu_e2e_goodpr", Name: "mcp__gh__create_pull_request", Input: map[string]any{"base": "main", "head": "feat", "title": "T"}}
		r := w.run(runArgs{transport: transport, policy: allowAllPolicy, mcp: config, script: []modelscript.Step{step(bad), step(good)}})
		if r.code != 77 {
			t.Fatalf("exit %d, want 77", r.code)
		}
		res := r.saw(t, "toolu_e2e_badpr")
		contains(t, "the model's tool_result", res.Text, "reason_code schema_invalid")
		if c := r.call(t, "toolu_e2e_badpr"); c.ReasonCode != "schema_invalid" || c.Source != "schema" || c.Executed {
			t.Errorf("report: %+v", c)
		}
		calls := fixtureCalls(t, log)
		if strings.Count(calls, "create_pull_request") != 1 || !strings.Contains(calls, "title:T") {
			t.Errorf("the fixture should have run the valid call only: %q", calls)
		}
		if c := r.call(t, "toolu_e2e_goodpr"); c.Effect != "allow" || !c.Executed {
			t.Errorf("the valid call: %+v", c)
		}
	})
}

// 6: a tool flagged requiresUserInteraction is denied at once with
// requires_user_interaction; nothing is left pending and it never runs.
func TestRequiresUserInteraction(t *testing.T) {
	t.Parallel()
	forTransports(t, func(t *testing.T, transport string) {
		w := newWorld(t)
		config, log := fixtureConfig(t, w)
		sign := modelscript.ToolUse{ID: "toolu_e2e_sign", Name: "mcp__gh__sign_contract", Input: map[string]any{"name": "x"}}
		r := w.run(runArgs{transport: transport, policy: allowAllPolicy, mcp: config, script: []modelscript.Step{step(sign)}})
		if r.code != 77 {
			t.Fatalf("exit %d, want 77", r.code)
		}
		contains(t, "the model's tool_result", r.saw(t, "toolu_e2e_sign").Text, "reason_code requires_user_interaction", "interactive")
		c := r.call(t, "toolu_e2e_sign")
		if c.ReasonCode != "requires_user_interaction" || c.Executed || c.ApprovalID != "" {
			t.Errorf("report: %+v", c)
		}
		if r.report.Counts.Pending != 0 {
			t.Errorf("nothing may be left pending: %+v", r.report.Counts)
		}
		if calls := fixtureCalls(t, log); strings.Contains(calls, "sign_contract") {
			t.Errorf("the tool ran: %q", calls)
		}
	})
}

// MCP discovery is cached by the server's configuration: a second run does
// not start the server once more to list its tools (only claude starts
// it), and still denies invalid input from the cached schema. A server
// that hangs is bounded by --mcp-timeout and says so while run waits.
func TestMCPDiscoveryCachedAndBounded(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	starts := filepath.Join(w.root, "starts")
	config, _ := fixtureConfig(t, w, "FIXTURE_STARTS="+starts)
	bad := func(id string) modelscript.ToolUse {
		return modelscript.ToolUse{ID: id, Name: "mcp__gh__create_pull_request", Input: map[string]any{"base": 5, "head": "feat"}}
	}
	counts := []int{}
	for i, id := range []string{"toolu_e2e_cache1", "toolu_e2e_cache2"} {
		r := w.run(runArgs{policy: allowAllPolicy, mcp: config, script: []modelscript.Step{step(bad(id))}})
		if c := r.call(t, id); r.code != 77 || c.ReasonCode != "schema_invalid" {
			t.Errorf("run %d: exit %d, %+v", i+1, r.code, c)
		}
		data, _ := os.ReadFile(starts)
		counts = append(counts, strings.Count(string(data), "started"))
	}
	if counts[0] != 2 || counts[1] != 3 {
		t.Errorf("the server started %v times after each run, want [2 3]: discovery, then claude; then claude alone", counts)
	}

	hang, _ := fixtureConfig(t, w, "FIXTURE_HANG=1")
	hang = strings.Replace(hang, `"gh"`, `"slow"`, 1)
	r := w.run(runArgs{policy: allowAllPolicy, mcp: hang, toolgate: []string{"--mcp-timeout", "2s"}, claudeEnv: []string{"MCP_TIMEOUT=2000"},
		script: []modelscript.Step{step(bash("toolu_e2e_slow", "touch after.txt"))}})
	contains(t, "run's stderr", r.stderr, `listing the tools of MCP server "slow" (stdio: `, "for up to 2s…",
		`MCP server "slow": did not list its tools within 2s`)
	if c := r.call(t, "toolu_e2e_slow"); !c.Executed {
		t.Errorf("the run after a hanging server: exit %d, %+v", r.code, c)
	}
}
