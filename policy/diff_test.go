package policy

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// doc is a policy document with a default and rules written as JSON.
func doc(def string, rules ...string) string {
	return fmt.Sprintf(`{"version":1,"default":%q,"rules":[%s]}`, def, strings.Join(rules, ","))
}

// summary is a diff in short: "kind rule impact" per change.
func summary(changes []RuleChange) []string {
	var out []string
	for _, c := range changes {
		id := c.RuleID
		if c.Kind == ChangeSchema {
			id = c.Tool
		}
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s", c.Kind, id, c.Impact)))
	}
	return out
}

func TestDiff(t *testing.T) {
	const (
		denyEnv   = `{"id":"deny-env","effect":"deny","tool":"Read","input":{"file_path":{"const":".env"}},"reason_code":"secret"}`
		denyEnvs  = `{"id":"deny-env","effect":"deny","tool":"Read","input":{"file_path":{"enum":[".env",".env.local"]}},"reason_code":"secret"}`
		denyEnvRe = `{"id":"deny-env","effect":"deny","tool":"Read","input":{"file_path":{"pattern":"\\.env.*"}},"reason_code":"secret"}`
		askPush   = `{"id":"ask-push","effect":"ask","tool":"Bash","input":{"command":{"command":[["git","push"]]}}}`
		askPushes = `{"id":"ask-push","effect":"ask","tool":"Bash","input":{"command":{"command":[["git","push"],["gh","pr"]]}}}`
		allowPush = `{"id":"ask-push","effect":"allow","tool":"Bash","input":{"command":{"command":[["git","push"]]}}}`
		allowGH   = `{"id":"allow-gh","effect":"allow","tool":"mcp__github__*"}`
		allowPR   = `{"id":"allow-gh","effect":"allow","tool":"mcp__github__create_pull_request"}`
		allowPRm  = `{"id":"allow-gh","effect":"allow","tool":"mcp__github__*","input":{"base":{"prefix":"feat/"}}}`
		denyRm    = `{"id":"deny-rm","effect":"deny","tool":"Bash","input":{"command":{"command":[["rm"]]}},"reason_code":"destructive"}`
		denyAll   = `{"id":"deny-bash","effect":"deny","tool":"Bash","reason_code":"no_shell"}`
	)
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"the same, laid out otherwise", doc("ask", denyEnv), strings.ReplaceAll(doc("ask", denyEnv), ":", ": "), nil},
		{"default looser", doc("ask"), doc("allow"), []string{"default  loosens"}},
		{"default stricter", doc("allow"), doc("deny"), []string{"default  tightens"}},
		{"deny widened", doc("ask", denyEnv), doc("ask", denyEnvs), []string{"changed deny-env tightens"}},
		{"deny narrowed", doc("ask", denyEnvs), doc("ask", denyEnv), []string{"changed deny-env loosens"}},
		{"deny narrowed, default deny", doc("deny", denyEnvs), doc("deny", denyEnv), []string{"changed deny-env may_loosen"}},
		{"deny rewritten", doc("ask", denyEnv), doc("ask", denyEnvRe), []string{"changed deny-env may_loosen"}},
		{"ask widened", doc("allow", askPush), doc("allow", askPushes), []string{"changed ask-push tightens"}},
		{"ask widened, default deny", doc("deny", askPush), doc("deny", askPushes), []string{"changed ask-push loosens"}},
		{"ask becomes allow", doc("ask", askPush), doc("ask", allowPush), []string{"changed ask-push loosens"}},
		{"allow becomes ask", doc("ask", allowPush), doc("ask", askPush), []string{"changed ask-push tightens"}},
		{"allow narrowed to one tool", doc("ask", allowGH), doc("ask", allowPR), []string{"changed allow-gh tightens"}},
		{"allow widened to the server", doc("ask", allowPR), doc("ask", allowGH), []string{"changed allow-gh loosens"}},
		{"allow gains a condition", doc("ask", allowGH), doc("ask", allowPRm), []string{"changed allow-gh tightens"}},
		{"allow loses a condition", doc("ask", allowPRm), doc("ask", allowGH), []string{"changed allow-gh loosens"}},
		{"allow under default allow", doc("allow"), doc("allow", allowGH), []string{"added allow-gh neutral"}},
		{"allow added", doc("ask"), doc("ask", allowGH), []string{"added allow-gh loosens"}},
		{"deny added", doc("ask"), doc("ask", denyRm), []string{"added deny-rm tightens"}},
		{"deny removed", doc("ask", denyRm), doc("ask"), []string{"removed deny-rm loosens"}},
		{"ask removed", doc("deny", askPush), doc("deny"), []string{"removed ask-push may_loosen"}},
		{"allow removed", doc("ask", allowGH), doc("ask"), []string{"removed allow-gh tightens"}},
		{"reason only", doc("ask", denyRm), doc("ask", strings.Replace(denyRm, "destructive", "dangerous", 1)), []string{"changed deny-rm neutral"}},
		{"two denies swap", doc("ask", denyRm, denyAll), doc("ask", denyAll, denyRm), []string{"precedence deny-bash neutral"}},
		{"rules of other tools swap", doc("ask", denyEnv, denyRm), doc("ask", denyRm, denyEnv), nil},
		{"an allow and an ask swap", doc("ask", allowGH, askPush), doc("ask", askPush, allowGH), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summary(Diff(mustParse(t, tt.old), mustParse(t, tt.new)))
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDiffSchemas(t *testing.T) {
	old := mustParse(t, `{"version":1,"default":"ask","rules":[],"schemas":{"a":{"type":"object"},"b":{"type":"object"}}}`)
	new := mustParse(t, `{"version":2,"default":"ask","rules":[],"schemas":{"b":{"type":"object","required":["x"]},"c":{"type":"object"}}}`)
	want := []string{"schema b may_loosen", "schema c tightens", "schema a loosens"}
	if got := summary(Diff(old, new)); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// The change that made protected-branch.json the design article's:
// ask-pr-main also asks for master, the docs search is allowed (which loosens), and the feature
// bases lose their allow.
func TestDiffOfTheArticlesChange(t *testing.T) {
	old, err := Load(filepath.Join("..", "testdata", "diff", "protected-branch-before.json"))
	if err != nil {
		t.Fatal(err)
	}
	changes := Diff(old, articlePolicy(t))
	want := []string{"changed ask-pr-main tightens", "added allow-docs-search loosens", "removed allow-pr-feature tightens"}
	if got := summary(changes); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if !slices.Equal(changes[0].Fields, []string{"input.base"}) || !strings.Contains(changes[0].Why, "more calls") {
		t.Errorf("ask-pr-main: %+v", changes[0])
	}
}
