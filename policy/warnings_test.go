package policy

import (
	"strings"
	"testing"
)

// A prefix that can never match is a warning at its place in the file; the
// document still loads.
func TestPrefixWarnings(t *testing.T) {
	p := mustParse(t, `{"version":1,"default":"ask","paths":{"s":["~/.ssh"]},"rules":[
		{"id":"spaced","effect":"deny","tool":"Bash","reason_code":"x","input":{"command":{"command":[
			["git push"]]}}},
		{"id":"glob","effect":"deny","tool":"Bash","reason_code":"x","input":{"command":{"command":[["rm*"]]}}},
		{"id":"keyword","effect":"ask","tool":"Bash","input":{"command":{"command":[["if"]]}}},
		{"id":"dir","effect":"ask","tool":"Bash","input":{"command":{"command":[["scripts/"]]}}},
		{"id":"never-allowed","effect":"allow","tool":"Bash","input":{"command":{"command":[["ls"],["source"],["export"]]}}},
		{"id":"allow-args","effect":"allow","tool":"Bash","input":{"command":{"argument_under":["src"]}}},
		{"id":"allow-in","effect":"allow","tool":"Bash","input":{"command":{"argument_in":"s"}}},
		{"id":"allow-outside","effect":"allow","tool":"Bash","input":{"command":{"argument_outside":["./*"]}}},
		{"id":"fine","effect":"deny","tool":"Bash","reason_code":"x","input":{"command":{"command":[["rm","-rf"],["./deploy.sh"],["["]]}}}]}`)
	want := []string{
		`test.json:3:4: rule "spaced": warning: the word "git push" holds a space, so it only matches one quoted word: a prefix is a list of words, such as ["git", "push"]`,
		`rule "glob": warning: the word "rm*" is compared literally: prefixes have no wildcards`,
		`rule "keyword": warning: "if" is a shell keyword, not a program: this prefix never matches`,
		`rule "dir": warning: "scripts/" names a directory, not a program`,
		`rule "never-allowed": warning: an allow rule never matches "source": it runs a file the matcher cannot see`,
		`rule "never-allowed": warning: an allow rule never matches "export": it sets shell variables`,
		`rule "allow-args": warning: in an allow rule, argument_under holds when any one path is under a directory`,
		`rule "allow-in": warning: in an allow rule, argument_in holds when any one path is in the list`,
		`rule "allow-outside": warning: in an allow rule, argument_outside holds when some path is outside the entries`,
	}
	wantWarnings(t, p, want)
}

// A rule whose tool differs from Claude Code's by case, or whose input
// names a field the tool does not have, never matches: a deny so written
// never denies (rm -rf / fell to the default). Each is a warning at its
// place, with the name it likely meant.
func TestToolAndFieldWarnings(t *testing.T) {
	p := mustParse(t, `{"version":1,"default":"allow","rules":[
		{"id":"lower","effect":"deny","tool":"bash","reason_code":"x","input":{"command":{"command":[["rm"]]}}},
		{"id":"field","effect":"deny","tool":"Read","reason_code":"x","input":{"filepath":{"pattern":".*\\.env"}}},
		{"id":"field-case","effect":"deny","tool":"Bash","reason_code":"x","input":{"Command":{"prefix":"rm"}}},
		{"id":"mcp","effect":"ask","tool":"mcp_github_create_issue"},
		{"id":"fine","effect":"deny","tool":"MultiEdit","reason_code":"x","input":{"edits.#.old_string":{"pattern":"x"},"file_path":{"prefix":"/etc"}}},
		{"id":"fine-mcp","effect":"ask","tool":"mcp__github__*","input":{"anything":{"const":1}}},
		{"id":"fine-unknown","effect":"ask","tool":"SomeNewTool","input":{"x":{"const":1}}}]}`)
	want := []string{
		`rule "lower": warning: Claude Code's tool is "Bash", and tool names are compared as written: this rule never matches`,
		`rule "field": warning: Read has no field "filepath": this condition never holds; did you mean "file_path"?`,
		`rule "field-case": warning: Bash has no field "Command": this condition never holds; did you mean "command"?`,
		`rule "mcp": warning: an MCP tool is named mcp__SERVER__TOOL`,
	}
	wantWarnings(t, p, want)
}

// wantWarnings requires p's warnings to contain want's, in order, and no
// other.
func wantWarnings(t *testing.T, p *Policy, want []string) {
	t.Helper()
	got := p.Warnings()
	if len(got) != len(want) {
		for _, w := range got {
			t.Log(w.Warning())
		}
		t.Fatalf("got %d warnings, want %d", len(got), len(want))
	}
	for i, w := range want {
		if !strings.Contains(got[i].Warning(), w) {
			t.Errorf("warning %d = %q, want it to contain %q", i, got[i].Warning(), w)
		}
	}
}
