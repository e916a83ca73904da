package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/api"
	"github.com/urfave/cli/v2"
)

// run runs the CLI as main does and returns the exit code and output.
func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	app := newApp(strings.NewReader(stdin), &out, &errOut)
	argv := interspersed(app, append([]string{"toolgate"}, args...))
	err := app.Run(argv)
	code = exitCode(err, &errOut)
	return code, out.String(), errOut.String()
}

const protectedBranch = "../../examples/policies/protected-branch.json"

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPolicyCheck(t *testing.T) {
	files, _ := filepath.Glob("../../examples/policies/*.json")
	if code, out, errOut := run(t, "", append([]string{"policy", "check"}, files...)...); code != 0 || out != "" || errOut != "" {
		t.Fatalf("valid examples: code %d, stdout %q, stderr %q (want 0 and quiet)", code, out, errOut)
	}
	bad := writeFile(t, "bad.json", "{\"version\":1,\"default\":\"ask\",\"rules\":[\n"+
		`{"id":"r1","effect":"ask","tool":"A","input":{"k":{"pattern":"("}}},`+"\n"+
		`{"id":"r1","effect":"nope","tool":"B"}]}`)
	code, _, errOut := run(t, "", "policy", "check", protectedBranch, bad)
	if code != exitConfig {
		t.Fatalf("invalid policy: code %d, want %d", code, exitConfig)
	}
	for _, want := range []string{"bad.json:2:", `rule "r1": input "k": pattern does not compile`, "bad.json:3:", "effect"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	code, out, _ := run(t, "", "policy", "check", "--json", bad)
	var report checkReport
	if err := json.Unmarshal([]byte(out), &report); err != nil || code != exitConfig {
		t.Fatalf("--json: code %d, %v: %s", code, err, out)
	}
	if report.SchemaVersion != 2 || report.Valid || len(report.Files[0].Errors) == 0 || report.Files[0].Rules != nil || report.Files[0].Tests != nil {
		t.Errorf("report: %+v", report)
	}
	if strings.Contains(out, `"rules": 0`) {
		t.Errorf("an invalid file reads as one with no rules:\n%s", out)
	}
	if code, _, _ := run(t, "", "policy", "check", filepath.Join(t.TempDir(), "missing.json")); code != exitNoInput {
		t.Errorf("missing file: code %d, want %d", code, exitNoInput)
	}
}

// A prefix that can never match is a warning in FILE:LINE:COL form; the
// policy stays valid.
func TestPolicyCheckWarns(t *testing.T) {
	p := writeFile(t, "warn.json", "{\"version\":1,\"default\":\"ask\",\"rules\":[\n"+
		`{"id":"deny-push","effect":"deny","tool":"Bash","reason_code":"x","input":{"command":{"command":[["git push"]]}}}]}`)
	code, _, errOut := run(t, "", "policy", "check", p)
	if code != 0 || !strings.Contains(errOut, `warn.json:2:98: rule "deny-push": warning: the word "git push" holds a space`) {
		t.Errorf("code %d, stderr %q", code, errOut)
	}
	code, out, _ := run(t, "", "policy", "check", "--json", p)
	var report checkReport
	if err := json.Unmarshal([]byte(out), &report); err != nil || code != 0 || !report.Valid ||
		len(report.Files[0].Warnings) != 1 || report.Files[0].Warnings[0].Line != 2 {
		t.Errorf("--json: code %d, %v: %s", code, err, out)
	}
}

func TestPolicyTest(t *testing.T) {
	articleCall := `{"type":"tool_use","id":"toolu_01A","name":"mcp__github__create_pull_request","input":{"base":"main","head":"x","title":"T"}}`
	code, out, _ := run(t, "", "policy", "test", protectedBranch, "--call", articleCall, "--json")
	var d decisionJSON
	if err := json.Unmarshal([]byte(out), &d); err != nil || code != 0 {
		t.Fatalf("code %d, %v: %s", code, err, out)
	}
	if d.Effect != "ask" || d.RuleID == nil || *d.RuleID != "ask-pr-main" || d.ToolUseID != "toolu_01A" || d.SchemaVersion != 1 {
		t.Errorf("decision %+v", d)
	}
	code, out, _ = run(t, `{"name":"Read","input":{"file_path":"./.env"}}`, "policy", "test", "--cwd", "/p", protectedBranch, "--call", "-")
	if code != 0 || !strings.HasPrefix(out, `deny by rule "deny-env" (reason_code secret_file`) {
		t.Errorf("stdin call: code %d, %q", code, out)
	}
	code, out, _ = run(t, "", "policy", "test", protectedBranch, "--json", "--call", `{"name":"mcp__x__y","input":{}}`)
	if !strings.Contains(out, `"rule_id": null`) || !strings.Contains(out, `"reason_code": "default"`) || code != 0 {
		t.Errorf("default decision: %s", out)
	}
	if code, _, errOut := run(t, "", "policy", "test", protectedBranch, "--call", `{"input":{}}`); code != exitDataErr || !strings.Contains(errOut, "no tool name") {
		t.Errorf("bad call: code %d, %q", code, errOut)
	}
	if code, _, _ := run(t, "", "policy", "test", protectedBranch); code != exitUsage {
		t.Errorf("missing --call: code %d", code)
	}
}

// policy test and policy explain give the verdict a live session would,
// the guard's built-in denies included: a path through /proc/self/cwd
// names another file to each process that opens it, which the gate cannot
// resolve, and the policy file itself is the session's to keep.
func TestPolicyTestAndExplainIncludeTheGuard(t *testing.T) {
	allowAll := filepath.Join(t.TempDir(), "allow.json")
	if err := os.WriteFile(allowAll, []byte(`{"version":1,"default":"allow","rules":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ call, rule string }{
		{`{"name":"Bash","input":{"command":"cat /proc/self/cwd/.env"}}`, "toolgate-guard-commands"},
		{`{"name":"Read","input":{"file_path":"/proc/self/cwd/.env"}}`, "toolgate-guard-files"},
		{`{"name":"Write","input":{"file_path":"` + allowAll + `","content":"{}"}}`, "toolgate-guard-files"},
	} {
		code, out, _ := run(t, "", "policy", "test", allowAll, "--json", "--call", c.call)
		var d decisionJSON
		if err := json.Unmarshal([]byte(out), &d); err != nil || code != 0 {
			t.Fatalf("code %d, %v: %s", code, err, out)
		}
		if d.Effect != "deny" || d.RuleID == nil || *d.RuleID != c.rule || d.ReasonCode != "toolgate_guard" {
			t.Errorf("policy test %s: %+v, want the guard's deny by %s", c.call, d, c.rule)
		}
		code, out, _ = run(t, "", "policy", "explain", allowAll, "--call", c.call)
		if code != 0 || !strings.Contains(out, c.rule) || !strings.Contains(out, "MATCH") || !strings.Contains(out, "decision: deny") {
			t.Errorf("policy explain %s: code %d\n%s", c.call, code, out)
		}
	}
}

func TestPolicyTestSchemaInvalid(t *testing.T) {
	p := writeFile(t, "p.json", `{"version":2,"default":"allow","rules":[],
		"schemas":{"mcp__gh__pr":{"type":"object","required":["base"],"properties":{"base":{"type":"string"}}}}}`)
	code, out, _ := run(t, "", "policy", "test", p, "--json", "--call", `{"name":"mcp__gh__pr","input":{"base":7}}`)
	var d decisionJSON
	if err := json.Unmarshal([]byte(out), &d); err != nil || code != 0 {
		t.Fatalf("code %d %v %s", code, err, out)
	}
	if d.Effect != "deny" || d.ReasonCode != "schema_invalid" || d.Source != "schema" || d.SchemaPointer == nil || *d.SchemaPointer != "/base" {
		t.Errorf("decision %+v", d)
	}
}

func TestPolicyExplain(t *testing.T) {
	code, out, _ := run(t, "", "policy", "explain", protectedBranch, "--call", `{"name":"mcp__github__create_pull_request","input":{"base":"dev"}}`)
	if code != 0 {
		t.Fatalf("code %d", code)
	}
	for _, want := range []string{"deny-env", "ask-pr-main", `input.base = "dev" does not satisfy enum ["main","master"]`, "allow-docs-search", "the default ask applies"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain output lacks %q:\n%s", want, out)
		}
	}
}

func TestPolicyExportSettings(t *testing.T) {
	code, out, errOut := run(t, "", "policy", "export-settings", "../../examples/policies/developer-laptop.json")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errOut)
	}
	var s settingsJSON
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	has := func(list []string, v string) bool {
		for _, x := range list {
			if x == v {
				return true
			}
		}
		return false
	}
	if !has(s.Permissions.Deny, "Bash(git reset --hard *)") || !has(s.Permissions.Ask, "Bash(git push *)") ||
		!has(s.Permissions.Allow, "Read(./**)") || !has(s.Permissions.Ask, "mcp__github__*") {
		t.Errorf("permissions: %+v", s.Permissions)
	}
	if !strings.Contains(errOut, `not projected: rule "deny-rm-rf"`) || !strings.Contains(errOut, `not projected: rule "deny-secrets"`) {
		t.Errorf("stderr should list what was not projected: %q", errOut)
	}
	code, out, _ = run(t, "", "policy", "export-settings", protectedBranch)
	if code != 0 || !strings.Contains(out, `"Read(./.env)"`) {
		t.Errorf("article projection: %s", out)
	}
}

func TestPolicySchema(t *testing.T) {
	code, out, _ := run(t, "", "policy", "schema")
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v["title"] != "toolgate policy document" {
		t.Errorf("code %d: %.80s", code, out)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"nosuch"}, {"policy", "nosuch"}, {"policy", "test", "--bogus"}} {
		if code, _, errOut := run(t, "", args...); code != exitUsage || !strings.Contains(errOut, "Try:") {
			t.Errorf("%v: code %d, stderr %q; want %d with a hint", args, code, errOut, exitUsage)
		}
	}
}

func TestEveryCommandDocumentsExitStatus(t *testing.T) {
	app := newApp(nil, nil, nil)
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Hidden {
				continue // internal: started by toolgate itself
			}
			if !strings.Contains(c.Description, "EXIT STATUS") || !strings.Contains(c.Description, "EXAMPLES") {
				t.Errorf("%s%s: help lacks EXAMPLES or EXIT STATUS", prefix, c.Name)
			}
			walk(prefix+c.Name+" ", c.Subcommands)
		}
	}
	walk("", app.Commands)
}

// toolgate run refuses before claude starts: an invalid policy (78) and
// arguments that would bypass the gate (64). claude here is /bin/true,
// which must never run: the daemon is not even needed.
func TestRunRefusesBeforeClaudeStarts(t *testing.T) {
	t.Setenv("TOOLGATE_RUNTIME_DIR", filepath.Join(t.TempDir(), "rt"))
	t.Setenv("TOOLGATE_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	hook := writeFile(t, "toolgate-hook", "#!/bin/sh\n")
	bad := writeFile(t, "bad.json", `{"version":1,"default":"maybe","rules":[]}`)
	if code, _, errOut := run(t, "", "run", "--hook", hook, "--policy", bad, "--", "/bin/true", "-p", "x"); code != exitConfig || !strings.Contains(errOut, "default") {
		t.Errorf("invalid policy: exit %d %q", code, errOut)
	}
	for _, args := range [][]string{{"--dangerously-skip-permissions"}, {"--permission-mode", "bypassPermissions"}, {"--permission-prompt-tool", "mine"}} {
		argv := append([]string{"run", "--hook", hook, "--policy", protectedBranch, "--", "/bin/true"}, args...)
		if code, _, errOut := run(t, "", argv...); code != exitUsage {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}
	if code, _, _ := run(t, "", "run", "--on-ask", "sometimes", "--", "/bin/true"); code != exitUsage {
		t.Errorf("--on-ask sometimes: exit %d", code)
	}
}

// What toolgate run can know before claude starts, it says before: an
// unwritable --report (73; it used to be found after claude ran in full)
// and a missing policy (66, saying where it looked and how to get one).
func TestRunChecksBeforeClaudeStarts(t *testing.T) {
	t.Setenv("TOOLGATE_RUNTIME_DIR", filepath.Join(t.TempDir(), "rt"))
	t.Setenv("TOOLGATE_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("TOOLGATE_POLICY", "")
	hook := writeFile(t, "toolgate-hook", "#!/bin/sh\n")
	ran := filepath.Join(t.TempDir(), "claude-ran")
	claude := writeFile(t, "claude", "#!/bin/sh\ntouch "+ran+"\n")
	os.Chmod(claude, 0o700)
	dir := t.TempDir()
	os.Chmod(dir, 0o500)
	for _, report := range []string{filepath.Join(dir, "sub", "r.json"), t.TempDir()} {
		code, _, errOut := run(t, "", "run", "--hook", hook, "--policy", protectedBranch, "--report", report, "--", claude, "-p", "x")
		if code != exitCantCreat || !strings.Contains(errOut, "claude was not started") || !strings.Contains(errOut, "Try: ") {
			t.Errorf("report %s: exit %d %q, want %d", report, code, errOut, exitCantCreat)
		}
	}
	code, _, errOut := run(t, "", "run", "--hook", hook, "--", claude, "-p", "x")
	if code != exitNoInput || !strings.Contains(errOut, defaultPolicy()) || !strings.Contains(errOut, "toolgate policy init") ||
		!strings.Contains(errOut, "--profile ci") {
		t.Errorf("no default policy: exit %d %q", code, errOut)
	}
	code, _, errOut = run(t, "", "run", "--hook", hook, "--policy", "/no/such/policy.json", "--", claude, "-p", "x")
	if code != exitNoInput || !strings.Contains(errOut, "policy init --output /no/such/policy.json") {
		t.Errorf("a named policy that is missing: exit %d %q", code, errOut)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("claude was started")
	}
}

// toolgate policy init writes the laptop or CI example where run looks by
// default, and never replaces a policy without --force.
func TestPolicyInit(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("TOOLGATE_POLICY", "")
	if code, out, errOut := run(t, "", "policy", "init"); code != 0 || out != "" || errOut != "" {
		t.Fatalf("policy init: %d %q %q, want 0 and quiet", code, out, errOut)
	}
	info, err := os.Stat(defaultPolicy())
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the default policy: %v %v", info, err)
	}
	// policy check with no FILE checks the default policy.
	code, out, _ := run(t, "", "policy", "check", "--json")
	if code != 0 || !strings.Contains(out, `"valid": true`) || !strings.Contains(out, defaultPolicy()) {
		t.Errorf("the starter policy does not check: %d %s", code, out)
	}
	if code, _, errOut := run(t, "", "policy", "init", "--profile", "ci"); code != exitCantCreat || !strings.Contains(errOut, "--force") {
		t.Errorf("over an existing policy: %d %q", code, errOut)
	}
	if code, _, _ := run(t, "", "policy", "init", "--profile", "ci", "--force"); code != 0 {
		t.Errorf("--force: %d", code)
	}
	if _, out, _ := run(t, "", "policy", "test", defaultPolicy(), "--call", `{"name":"mcp__x__y","input":{}}`); !strings.HasPrefix(out, "deny by the default") {
		t.Errorf("the ci profile's default: %q", out)
	}
	other := filepath.Join(t.TempDir(), "p.json")
	if code, _, _ := run(t, "", "policy", "init", "--output", other); code != 0 {
		t.Errorf("--output: %d", code)
	}
	if code, _, _ := run(t, "", "policy", "init", "--profile", "server"); code != exitUsage {
		t.Errorf("an unknown profile: %d", code)
	}
}

func TestSchemaCommand(t *testing.T) {
	code, list, _ := run(t, "", "schema")
	if code != 0 {
		t.Fatalf("schema: %d", code)
	}
	for _, name := range append([]string{"policy"}, api.SchemaNames()...) {
		if !strings.Contains(list, name+" ") {
			t.Errorf("the list lacks %s:\n%s", name, list)
		}
		code, out, _ := run(t, "", "schema", name)
		var v map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v["$schema"] == nil {
			t.Errorf("schema %s: %d %.80s", name, code, out)
		}
	}
	_, viaPolicy, _ := run(t, "", "policy", "schema")
	if _, direct, _ := run(t, "", "schema", "policy"); direct != viaPolicy {
		t.Error("toolgate schema policy and toolgate policy schema differ")
	}
	if code, _, _ := run(t, "", "schema", "nosuch"); code != exitUsage {
		t.Errorf("an unknown schema: %d", code)
	}
}

// A bad command line says what was probably meant and which help to read.
func TestUsageErrorsHelp(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--polcy", "p.json", "--", "claude"}, []string{"no flag --polcy", "did you mean --policy?", "Try: toolgate run --help"}},
		{[]string{"policy", "init", "--prfile", "ci"}, []string{"did you mean --profile?", "Try: toolgate policy init --help"}},
		{[]string{"run", "--approval-timeout", "10", "--", "claude"}, []string{"--approval-timeout takes a duration", "90s", "10m", "Try: toolgate run --help"}},
		{[]string{"run", "--policy"}, []string{"--policy needs a value", "Try: toolgate run --help"}},
		{[]string{"run", "--on-ask", "maybe", "--", "claude"}, []string{"--on-ask must be wait, deny or defer", "Try: toolgate run --help"}},
		{[]string{"pendng"}, []string{"did you mean toolgate pending?", "Try: toolgate --help"}},
		{[]string{"policy", "chek", "x.json"}, []string{"did you mean toolgate policy check?", "Try: toolgate policy --help"}},
		{[]string{"policy.json", "--help"}, []string{`"policy.json" is a file, not a command`, "toolgate policy check policy.json"}},
		{[]string{"--versoin"}, []string{"did you mean --version?"}},
		{[]string{"help", "polcy"}, []string{"did you mean toolgate policy?"}},
		{[]string{"completion", "tcsh"}, []string{"bash, zsh and fish"}},
	} {
		code, _, errOut := run(t, "", tt.args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d", tt.args, code, exitUsage)
		}
		for _, w := range tt.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tt.args, w, errOut)
			}
		}
		if strings.Contains(errOut, " -polcy") || strings.Contains(errOut, "flag provided but not defined") {
			t.Errorf("%v: the flag package's words reach the user:\n%s", tt.args, errOut)
		}
	}
}

// toolgate --help and -h print the help and exit 0, as every command's
// --help does; a misspelt flag still says what it is not.
func TestRootHelpExitsZero(t *testing.T) {
	for _, flag := range []string{"--help", "-h"} {
		if code, out, errOut := run(t, "", flag); code != 0 || !strings.Contains(out, "toolgate - a permission gate") || !strings.Contains(out, "EXIT STATUS") {
			t.Errorf("toolgate %s: exit %d\n%s%s", flag, code, out, errOut)
		}
	}
	if code, _, errOut := run(t, "", "--hlep"); code != exitUsage || !strings.Contains(errOut, "did you mean --help?") {
		t.Errorf("toolgate --hlep: exit %d %q", code, errOut)
	}
}

// From the program on, toolgate run's words are the program's command
// line, with or without --: toolgate run claude -p x runs claude -p x.
func TestRunTakesTheProgramsCommandLine(t *testing.T) {
	app := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	for _, tt := range []struct{ args, want []string }{
		{[]string{"run", "claude", "-p", "x"}, []string{"run", "claude", "-p", "x"}},
		{[]string{"run", "--policy", "p.json", "claude", "-p", "--model", "m", "x"}, []string{"run", "--policy", "p.json", "claude", "-p", "--model", "m", "x"}},
		{[]string{"run", "claude", "-p", "x", "--report", "r.json"}, []string{"run", "claude", "-p", "x", "--report", "r.json"}},
		{[]string{"run", "--", "claude", "-p"}, []string{"run", "--", "claude", "-p"}},
		{[]string{"policy", "test", "p.json", "--call", "{}"}, []string{"policy", "test", "--call", "{}", "p.json"}},
	} {
		got := interspersed(app, append([]string{"toolgate"}, tt.args...))[1:]
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%q: %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestHelpVersionCompletion(t *testing.T) {
	if code, out, _ := run(t, "", "help", "run"); code != 0 || !strings.Contains(out, "toolgate run - run claude") {
		t.Errorf("help run: %d %.80q", code, out)
	}
	if code, out, _ := run(t, "", "help", "policy", "init"); code != 0 || !strings.Contains(out, "toolgate policy init - write a starter policy") {
		t.Errorf("help policy init: %d %.80q", code, out)
	}
	// It suggested a file Claude Code does not read.
	if _, out, _ := run(t, "", "policy", "export-settings", "--help"); strings.Contains(out, "permissions.json") || !strings.Contains(out, ".claude/settings.local.json") {
		t.Errorf("export-settings --help:\n%s", out)
	}
	// The cap on a rule's approval_timeout in installed sessions is said.
	if _, out, _ := run(t, "", "install", "--help"); !strings.Contains(out, "never lengthen it") {
		t.Errorf("install --help does not say how approval_timeout is capped:\n%s", out)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := run(t, "", args...)
		if code != 0 || !strings.HasPrefix(out, "toolgate dev (") || !strings.Contains(out, "tested with Claude Code 2.1.332 (pinned), 2.1.150") {
			t.Errorf("%v: %d %q", args, code, out)
		}
	}
	code, out, _ := run(t, "", "version", "--json")
	var b buildInfo
	if err := json.Unmarshal([]byte(out), &b); err != nil || code != 0 || b.SchemaVersion != 1 || b.Go == "" || len(b.ClaudeCode) != 2 {
		t.Errorf("version --json: %d %v %s", code, err, out)
	}
	for shell, want := range map[string]string{"bash": "complete -o bashdefault", "zsh": "compdef _toolgate toolgate", "fish": "complete -c toolgate"} {
		if code, out, _ := run(t, "", "completion", shell); code != 0 || !strings.Contains(out, want) {
			t.Errorf("completion %s: %d %.120q", shell, code, out)
		}
	}
	// What the scripts ask: the words that may come next (urfave reads
	// the last word typed from os.Args).
	args := os.Args
	defer func() { os.Args = args }()
	os.Args = []string{"toolgate", "policy", "--generate-bash-completion"}
	if _, out, _ := run(t, "", os.Args[1:]...); !strings.Contains(out, "init\n") || strings.Contains(out, "help\n") {
		t.Errorf("completion of policy: %q", out)
	}
	os.Args = []string{"toolgate", "run", "--po", "--generate-bash-completion"}
	if _, out, _ := run(t, "", os.Args[1:]...); !strings.Contains(out, "--policy") {
		t.Errorf("completion of run --po: %q", out)
	}
}

// Each command's EXIT STATUS lists codes from the table only, and the
// approvers, audit and the policy group list none they cannot return.
func TestExitStatusListsWhatCanHappen(t *testing.T) {
	known := map[string]bool{"N": true}
	for _, line := range strings.Split(exitStatusHelp, "\n")[1:] {
		known[strings.Fields(line)[0]] = true
	}
	never := map[string][]string{
		"pending": {"65", "75", "77", "79"}, "show": {"75", "77", "79"}, "watch": {"75", "77", "79"}, "audit": {"75", "77", "78", "79", "80"},
		"policy": {"69", "75", "77", "79", "80"}, "daemon status": {"65", "75", "77"},
	}
	app := newApp(nil, nil, nil)
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			name := strings.TrimSpace(prefix + c.Name)
			_, status, _ := strings.Cut(c.Description, "EXIT STATUS\n")
			codes := map[string]bool{}
			for _, line := range strings.Split(status, "\n") {
				if f := strings.Fields(line); len(f) > 0 && (f[0] == "N" || f[0][0] >= '0' && f[0][0] <= '9') {
					codes[f[0]] = true
					if !known[f[0]] {
						t.Errorf("%s: exit %s is not in the table", name, f[0])
					}
				}
			}
			for _, code := range never[name] {
				if codes[code] {
					t.Errorf("%s lists exit %s, which it cannot return", name, code)
				}
			}
			walk(name+" ", c.Subcommands)
		}
	}
	walk("", app.Commands)
}

// An empty field is left out, never printed as "reason_code " or "(pid 0, )".
func TestShowLeavesOutEmptyFields(t *testing.T) {
	var b bytes.Buffer
	d := api.ApprovalDetail{Approval: api.Approval{ID: "apr_1", Status: "approved", ToolName: "Bash", Input: json.RawMessage(`{"command":"ls"}`)},
		Decision:  &api.Decision{Actor: "user:alex", Decision: api.EffectAllow},
		WriteBack: &api.WriteBack{Effect: api.EffectAllow, WroteBack: true}}
	printApproval(&b, d)
	printDecision(&b, d)
	for _, bad := range []string{"reason_code )", "reason_code ,", "reason_code \n", "(pid 0", ", )", "()"} {
		if strings.Contains(b.String(), bad) {
			t.Errorf("%q in:\n%s", bad, b.String())
		}
	}
	if !strings.Contains(b.String(), "approved by user:alex at") || !strings.Contains(b.String(), "written back to claude: allow\n") {
		t.Errorf("show:\n%s", b.String())
	}
}

// A project's shared settings name the hook and the policy portably: from
// PATH or the project, never by this machine's absolute paths; what cannot
// be named so is refused with the way out. --scope local is this checkout's.
func TestInstallScopes(t *testing.T) {
	policyDoc, err := os.ReadFile(protectedBranch)
	if err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	t.Chdir(project)
	bin := t.TempDir()
	hook := filepath.Join(bin, "toolgate-hook")
	os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o755)
	os.MkdirAll(filepath.Join(project, ".claude"), 0o755)
	os.WriteFile(filepath.Join(project, ".claude", "p.json"), policyDoc, 0o600)
	outside := writeFile(t, "p.json", string(policyDoc))
	t.Setenv("PATH", "/usr/bin:/bin")

	code, _, errOut := run(t, "", "install", "--scope", "project", "--policy", ".claude/p.json", "--hook", hook)
	if code != exitNoInput || !strings.Contains(errOut, "not on your PATH") || !strings.Contains(errOut, "--scope local") {
		t.Errorf("a hook off PATH: %d %q", code, errOut)
	}
	code, _, errOut = run(t, "", "install", "--scope", "project", "--policy", outside, "--hook", hook)
	if code != exitNoInput || !strings.Contains(errOut, "outside the project") || !strings.Contains(errOut, "policy init --output") {
		t.Errorf("a policy outside the project: %d %q", code, errOut)
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	if code, _, errOut := run(t, "", "install", "--scope", "project", "--policy", ".claude/p.json", "--hook", hook); code != 0 || errOut != "" {
		t.Fatalf("install --scope project: %d %q", code, errOut)
	}
	shared, _ := os.ReadFile(filepath.Join(project, ".claude", "settings.json"))
	if !strings.Contains(string(shared), `exec 'toolgate-hook' --policy \"$CLAUDE_PROJECT_DIR\"/'.claude/p.json'`) ||
		strings.Contains(string(shared), project) || strings.Contains(string(shared), bin) {
		t.Errorf("the shared settings name this machine's paths:\n%s", shared)
	}
	// A hook that lives in the project is named from it.
	os.MkdirAll(filepath.Join(project, "bin"), 0o755)
	os.WriteFile(filepath.Join(project, "bin", "toolgate-hook"), []byte("#!/bin/sh\n"), 0o755)
	if code, _, errOut := run(t, "", "install", "--scope", "project", "--policy", ".claude/p.json", "--hook", "bin/toolgate-hook"); code != 0 {
		t.Fatalf("a hook in the project: %d %q", code, errOut)
	}
	shared, _ = os.ReadFile(filepath.Join(project, ".claude", "settings.json"))
	if !strings.Contains(string(shared), `exec \"$CLAUDE_PROJECT_DIR\"/'bin/toolgate-hook'`) {
		t.Errorf("a hook in the project:\n%s", shared)
	}
	// This checkout only: any path will do, in settings.local.json.
	if code, _, errOut := run(t, "", "install", "--scope", "local", "--policy", outside, "--hook", hook); code != 0 {
		t.Fatalf("install --scope local: %d %q", code, errOut)
	}
	local, _ := os.ReadFile(filepath.Join(project, ".claude", "settings.local.json"))
	if !strings.Contains(string(local), "'"+hook+"'") || !strings.Contains(string(local), "'"+outside+"'") {
		t.Errorf("the local settings:\n%s", local)
	}
	if code, _, _ := run(t, "", "uninstall", "--scope", "local"); code != 0 {
		t.Errorf("uninstall --scope local: %d", code)
	}
	if _, err := os.Stat(filepath.Join(project, ".claude", "settings.local.json")); !os.IsNotExist(err) {
		t.Errorf("the local settings file toolgate created stays: %v", err)
	}
	if code, _, _ := run(t, "", "install", "--scope", "team"); code != exitUsage {
		t.Errorf("--scope team: %d", code)
	}
}
