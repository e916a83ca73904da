package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
)

func mustParse(t testing.TB, doc string) *Policy {
	t.Helper()
	p, err := Parse("test.json", []byte(doc))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return p
}

func articlePolicy(t testing.TB) *Policy {
	t.Helper()
	p, err := Load(filepath.Join("..", "examples", "policies", "protected-branch.json"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func call(tool, input string) Call {
	return Call{Tool: tool, Input: []byte(input), Cwd: "/project", Home: "/home/u"}
}

func TestArticlePolicySemantics(t *testing.T) {
	p := articlePolicy(t)
	tests := []struct {
		name   string
		call   Call
		effect api.Effect
		rule   string
		reason string
	}{
		{"the design article's example call", call("mcp__github__create_pull_request", `{"base":"main","head":"feat","title":"T"}`), api.EffectAsk, "ask-pr-main", "protected_branch"},
		{".env", call("Read", `{"file_path":".env"}`), api.EffectDeny, "deny-env", "secret_file"},
		{"./.env", call("Read", `{"file_path":"./.env"}`), api.EffectDeny, "deny-env", "secret_file"},
		{"sub/../.env", call("Read", `{"file_path":"sub/../.env"}`), api.EffectDeny, "deny-env", "secret_file"},
		{"absolute .env in the project", call("Read", `{"file_path":"/project/.env"}`), api.EffectDeny, "deny-env", "secret_file"},
		{"duplicate slashes", call("Read", `{"file_path":"/project//.env"}`), api.EffectDeny, "deny-env", "secret_file"},
		{".env of another project", call("Read", `{"file_path":"/other/.env"}`), api.EffectAsk, "", "default"},
		{"base master", call("mcp__github__create_pull_request", `{"base":"master","head":"feat","title":"T"}`), api.EffectAsk, "ask-pr-main", "protected_branch"},
		{"unnamed MCP tool", call("mcp__github__merge_pull_request", `{"pull_number":7}`), api.EffectAsk, "", "default"},
		{"the docs search", call("mcp__docs__search", `{"q":"x"}`), api.EffectAllow, "allow-docs-search", ""},
		{"another base", call("mcp__github__create_pull_request", `{"base":"develop"}`), api.EffectAsk, "", "default"},
		{"base missing", call("mcp__github__create_pull_request", `{"head":"x"}`), api.EffectAsk, "", "default"},
		{"base of another type", call("mcp__github__create_pull_request", `{"base":["main"]}`), api.EffectAsk, "", "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Decide(tt.call)
			if d.Effect != tt.effect || d.RuleID != tt.rule || d.ReasonCode != tt.reason {
				t.Errorf("got %s rule %q reason %q, want %s rule %q reason %q",
					d.Effect, d.RuleID, d.ReasonCode, tt.effect, tt.rule, tt.reason)
			}
			if d.Source != api.SourcePolicy || (d.Effect == api.EffectDeny) != (d.Message != "") {
				t.Errorf("a verdict says its source, and a deny its message: %+v", d)
			}
		})
	}
}

// TestUnconstrainedAllowReleasesMain demonstrates the design article's warning: an
// allow rule with no input constraint lets base main through when no ask
// rule catches it first.
func TestUnconstrainedAllowReleasesMain(t *testing.T) {
	p := mustParse(t, `{"version":1,"default":"ask","rules":[
		{"id":"allow-prs","effect":"allow","tool":"mcp__github__create_pull_request"}]}`)
	d := p.Decide(call("mcp__github__create_pull_request", `{"base":"main"}`))
	if d.Effect != api.EffectAllow || d.RuleID != "allow-prs" {
		t.Fatalf("got %+v, want allow by allow-prs", d)
	}
	// With the design article's ask rule in the same document, ask wins over allow.
	p = mustParse(t, `{"version":1,"default":"ask","rules":[
		{"id":"allow-prs","effect":"allow","tool":"mcp__github__create_pull_request"},
		{"id":"ask-pr-main","effect":"ask","tool":"mcp__github__create_pull_request","input":{"base":{"const":"main"}}}]}`)
	if d := p.Decide(call("mcp__github__create_pull_request", `{"base":"main"}`)); d.RuleID != "ask-pr-main" {
		t.Fatalf("got %+v, want ask by ask-pr-main", d)
	}
}

func TestMatchOrder(t *testing.T) {
	p := mustParse(t, `{"version":3,"default":"allow","rules":[
		{"id":"allow-env-exactly","effect":"allow","tool":"Read","input":{"file_path":{"const":"/project/.env"}}},
		{"id":"ask-all-reads","effect":"ask","tool":"Read"},
		{"id":"deny-env","effect":"deny","tool":"Read","input":{"file_path":{"const":".env"}},"reason_code":"secret"},
		{"id":"deny-first","effect":"deny","tool":"Bash","reason_code":"first"},
		{"id":"deny-second","effect":"deny","tool":"W*","reason_code":"second"}]}`)
	tests := []struct {
		name, tool, input, rule string
	}{
		{"deny beats a more specific allow", "Read", `{"file_path":".env"}`, "deny-env"},
		{"ask beats allow", "Read", `{"file_path":"a.go"}`, "ask-all-reads"},
		{"earlier rule within an effect wins", "Bash", `{"command":"ls"}`, "deny-first"},
		{"glob rule", "Write", `{}`, "deny-second"},
	}
	for _, tt := range tests {
		if d := p.Decide(call(tt.tool, tt.input)); d.RuleID != tt.rule {
			t.Errorf("%s: got rule %q, want %q", tt.name, d.RuleID, tt.rule)
		}
	}
}

func TestConditions(t *testing.T) {
	p := mustParse(t, `{"version":1,"default":"deny","rules":[
		{"id":"const-obj","effect":"allow","tool":"t1","input":{"options":{"const":{"force":false,"n":1}}}},
		{"id":"nested","effect":"allow","tool":"t2","input":{"options.force":{"const":true}}},
		{"id":"enum-num","effect":"allow","tool":"t3","input":{"n":{"enum":[1,2,"3"]}}},
		{"id":"prefix","effect":"allow","tool":"t4","input":{"url":{"prefix":"https://docs.example.com/"}}},
		{"id":"pattern","effect":"allow","tool":"t5","input":{"branch":{"pattern":"feat/[a-z-]+"}}},
		{"id":"under","effect":"allow","tool":"t6","input":{"file_path":{"path_under":"src"}}},
		{"id":"under-home","effect":"allow","tool":"t7","input":{"path":{"path_under":"~/notes"}}},
		{"id":"both","effect":"allow","tool":"t8","input":{"file_path":{"path_under":".","pattern":".*\\.go"}}}]}`)
	tests := []struct {
		tool, input string
		allow       bool
	}{
		{"t1", `{"options":{"n":1.0,"force":false}}`, true},
		{"t1", `{"options":{"n":1,"force":false,"x":1}}`, false},
		{"t2", `{"options":{"force":true}}`, true},
		{"t2", `{"options":{"force":"true"}}`, false},
		{"t3", `{"n":2}`, true},
		{"t3", `{"n":"3"}`, true},
		{"t3", `{"n":3}`, false},
		{"t3", `{"n":"1"}`, false},
		{"t4", `{"url":"https://docs.example.com/a"}`, true},
		{"t4", `{"url":"https://docs.example.com.evil/a"}`, false},
		{"t5", `{"branch":"feat/login"}`, true},
		{"t5", `{"branch":"feat/login;rm"}`, false},
		{"t5", `{"branch":"xfeat/login"}`, false},
		{"t6", `{"file_path":"src/a/b.go"}`, true},
		{"t6", `{"file_path":"/project/src"}`, true},
		{"t6", `{"file_path":"src/../../etc/passwd"}`, false},
		{"t6", `{"file_path":"srcx/a.go"}`, false},
		{"t6", `{"file_path":"/project/src/../secrets"}`, false},
		{"t6", `{"file_path":""}`, false},
		{"t7", `{"path":"/home/u/notes/today.md"}`, true},
		{"t7", `{"path":"~/notes/../.ssh/id_rsa"}`, false},
		{"t8", `{"file_path":"main.go"}`, true},
		{"t8", `{"file_path":"main.py"}`, false},
		{"t8", `{"file_path":"../x.go"}`, false},
	}
	for _, tt := range tests {
		d := p.Decide(call(tt.tool, tt.input))
		if got := d.Effect == api.EffectAllow; got != tt.allow {
			t.Errorf("%s %s: allow = %v, want %v (%+v)", tt.tool, tt.input, got, tt.allow, d)
		}
	}
}

func TestInputThatIsNotAnObject(t *testing.T) {
	p := mustParse(t, `{"version":1,"default":"allow","rules":[]}`)
	for _, input := range []string{``, `[]`, `"x"`, `{"a":`, `{} {}`} {
		if d := p.Decide(call("Bash", input)); d.Effect != api.EffectDeny || d.ReasonCode != api.ReasonSchemaInvalid {
			t.Errorf("input %q: got %+v, want deny schema_invalid", input, d)
		}
	}
}

func TestToolGlob(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"*", "Bash", true},
		{"mcp__github__*", "mcp__github__create_pull_request", true},
		{"mcp__github__*", "mcp__githubx__create", false},
		{"mcp__*__search", "mcp__docs__search", true},
		{"mcp__*__search", "mcp__docs__search_all", false},
		{"a*a", "a", false},
		{"a*a", "aa", true},
		{"Bash", "Bash", true},
		{"Bash", "bash", false},
	}
	for _, tt := range tests {
		if got := newToolGlob(tt.pattern).match(tt.name); got != tt.want {
			t.Errorf("glob %q on %q = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

func TestExplain(t *testing.T) {
	p := articlePolicy(t)
	d, traces := p.Explain(call("mcp__github__create_pull_request", `{"base":"main"}`))
	if d.RuleID != "ask-pr-main" {
		t.Fatalf("decision %+v", d)
	}
	want := []struct {
		id      string
		matched bool
		why     string
	}{
		{"deny-env", false, "does not match"},
		{"ask-pr-main", true, "every input condition match"},
		{"allow-docs-search", false, "not evaluated"},
	}
	if len(traces) != len(want) {
		t.Fatalf("got %d traces, want %d: %+v", len(traces), len(want), traces)
	}
	for i, w := range want {
		tr := traces[i]
		if tr.RuleID != w.id || tr.Matched != w.matched || !strings.Contains(tr.Why, w.why) {
			t.Errorf("trace %d = %+v, want %s matched=%v why~%q", i, tr, w.id, w.matched, w.why)
		}
	}
	_, traces = p.Explain(call("mcp__github__create_pull_request", `{"base":"dev"}`))
	if !strings.Contains(traces[1].Why, `"dev"`) {
		t.Errorf("a miss should show the value: %q", traces[1].Why)
	}
}

func TestExamplePoliciesLoad(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "examples", "policies", "*.json"))
	if err != nil || len(files) < 3 {
		t.Fatalf("want at least 3 example policies, got %v (%v)", files, err)
	}
	for _, f := range files {
		p, err := Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(p.Document().Tests) == 0 {
			t.Errorf("%s has no inline tests", f)
		}
	}
}

func TestDocumentSchemaIsValidJSON(t *testing.T) {
	var v map[string]any
	if err := json.Unmarshal(DocumentSchema(), &v); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("schema.json"); err != nil {
		t.Fatal(err)
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func TestApprovalTimeout(t *testing.T) {
	p := mustParse(t, `{"version":1,"default":"ask","rules":[
		{"id":"ask-push","effect":"ask","tool":"Bash","approval_timeout":"90s"}]}`)
	if d := p.Decide(call("Bash", `{"command":"x"}`)); time.Duration(d.ApprovalTimeout).Seconds() != 90 {
		t.Errorf("timeout %v", d.ApprovalTimeout)
	}
	if d := p.Decide(call("Read", `{}`)); d.ApprovalTimeout != 0 {
		t.Errorf("the default has no timeout of its own: %v", d.ApprovalTimeout)
	}
	for _, bad := range []string{`"soon"`, `"0s"`, `"-1m"`, `5`} {
		if _, err := Parse("p.json", []byte(`{"version":1,"default":"ask","rules":[{"id":"a","effect":"ask","tool":"B","approval_timeout":`+bad+`}]}`)); err == nil {
			t.Errorf("approval_timeout %s was accepted", bad)
		}
	}
}

// examples/policies/protected-branch.json is the design article's policy: its text is
// the design article's, byte for byte, up to the end of the rules (the file adds
// inline tests after them), and it decides as the design article's document does.
func TestProtectedBranchPolicyIsTheArticles(t *testing.T) {
	article, err := os.ReadFile(filepath.Join("..", "testdata", "article", "policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := os.ReadFile(filepath.Join("..", "examples", "policies", "protected-branch.json"))
	if err != nil {
		t.Fatal(err)
	}
	rules, ok := strings.CutSuffix(string(article), "  ]\n}\n")
	if !ok {
		t.Fatal("testdata/article/policy.json does not end as the design article's document does")
	}
	if !strings.HasPrefix(string(ours), rules+"  ],\n  \"tests\": [") {
		t.Errorf("protected-branch.json's version, default and rules are not the design article's, byte for byte; want them to start:\n%s", rules)
	}
	want, got := mustParse(t, string(article)), articlePolicy(t)
	if !reflect.DeepEqual(want.Rules(), got.Rules()) || want.Version != got.Version || want.Default != got.Default {
		t.Errorf("protected-branch.json decodes as %+v, the design article's as %+v", got.Rules(), want.Rules())
	}
	// The design article's example call, exactly as the article shows it.
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "article", "tool_use.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseCall(raw)
	if err != nil {
		t.Fatal(err)
	}
	if v := got.Decide(Call{Tool: c.Name, Input: c.Input, Cwd: TestCwd}); v.Effect != api.EffectAsk || v.RuleID != "ask-pr-main" || v.ReasonCode != "protected_branch" {
		t.Errorf("the design article's example call: %+v, want ask by ask-pr-main (protected_branch)", v)
	}
	var hasIt bool
	for _, tt := range got.Document().Tests {
		hasIt = hasIt || tt.Call.ID == c.ID && string(tt.Call.Input) != "" && tt.Call.Name == c.Name
	}
	if !hasIt {
		t.Errorf("protected-branch.json has no inline test of the design article's example call %s", c.ID)
	}
}
