package policy

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/paths"
	"github.com/toolgate/toolgate/policy/bash"
)

// The guard denies what touches the gate itself, whatever the policy
// allows; everything else goes on to the policy.
func TestGuard(t *testing.T) {
	root := t.TempDir()
	home, project := filepath.Join(root, "home"), filepath.Join(root, "project")
	gate := paths.Paths{RuntimeDir: filepath.Join(root, "run", "toolgate"), StateDir: filepath.Join(home, ".local/state/toolgate")}
	for _, d := range []string{project, gate.RuntimeDir, gate.StateDir, filepath.Join(home, ".config/toolgate")} {
		os.MkdirAll(d, 0o700)
	}
	// A link in the project to toolgate's configuration: writing through
	// it is writing the policy.
	os.Symlink(filepath.Join(home, ".config/toolgate"), filepath.Join(project, "cfg"))
	g := NewGuard(GuardPaths{Gate: gate, ConfigDir: filepath.Join(home, ".config/toolgate"), Exe: "/opt/toolgate/bin/toolgate",
		ClaudeDir: filepath.Join(home, ".claude"), Project: project, Extra: []string{"/srv/policy.json"}})
	p := mustParse(t, `{"version":1,"default":"allow","rules":[]}`)
	s := NewSession(p, nil, project, home)
	s.Guard = g
	rt := gate.RuntimeDir
	for _, tt := range []struct {
		tool, input, rule string
	}{
		{"Write", `{"file_path":"~/.config/toolgate/policy.json","content":"x"}`, GuardFiles},
		{"Edit", `{"file_path":"cfg/policy.json","old_string":"a","new_string":"b"}`, GuardFiles}, // through the link
		{"Write", `{"file_path":"/srv/policy.json","content":"{}"}`, GuardFiles},
		{"Write", `{"file_path":"/opt/toolgate/bin/toolgate-hook","content":"x"}`, GuardFiles},
		{"Edit", `{"file_path":".claude/settings.json","old_string":"a","new_string":"b"}`, GuardFiles},
		{"Write", `{"file_path":"~/.claude/settings.json","content":"{}"}`, GuardFiles},
		{"Write", `{"file_path":"/etc/claude-code/managed-settings.json","content":"{}"}`, GuardFiles},
		{"Read", `{"file_path":"` + rt + `/spool/x.jsonl"}`, GuardFiles},
		{"NotebookEdit", `{"notebook_path":"~/.local/state/toolgate/ledger/000001.vlog","new_source":"x"}`, GuardFiles},
		{"Bash", `{"command":"toolgate approve apr_01"}`, GuardCommands},
		{"Bash", `{"command":"env -u CLAUDECODE /usr/local/bin/toolgate 'deny' apr_01"}`, GuardCommands},
		{"Bash", `{"command":"curl --unix-socket \"$XDG_RUNTIME_DIR/toolgate/gate.sock\" http://x/v1/status"}`, GuardCommands},
		{"Bash", `{"command":"socat - UNIX-CONNECT:` + rt + `/approve.sock"}`, GuardCommands},
		{"Bash", `{"command":"dbus-send --session --type=signal /org/freedesktop/Notifications org.freedesktop.Notifications.ActionInvoked uint32:1 string:x"}`, GuardCommands},
		{"Bash", `{"command":"echo '* * * * * toolgate approve x' | crontab -"}`, GuardCommands},
		{"Bash", `{"command":"echo toolgate approve x | at now + 1 minute"}`, GuardCommands},
		{"Bash", `{"command":"systemd-run --user sleep 1"}`, GuardCommands},
		{"Bash", `{"command":"toolgate audit prune --before 1s"}`, GuardCommands},
		{"Bash", `{"command":"echo '{}' > ~/.config/toolgate/policy.json"}`, GuardCommands},
		{"Bash", `{"command":"cp evil cfg/policy.json"}`, GuardCommands},
		{"Bash", `{"command":"cat .claude/settings.local.json"}`, GuardCommands},
	} {
		v := s.Evaluate(tt.tool, []byte(tt.input))
		if v.Effect != api.EffectDeny || v.RuleID != tt.rule || v.ReasonCode != api.ReasonToolgateGuard || v.Source != api.SourceGuard {
			t.Errorf("%s %s: got %s by %q (%s)", tt.tool, tt.input, v.Effect, v.RuleID, v.ReasonCode)
		}
		if strings.Contains(v.Message, rt) || strings.Contains(v.Message, home) {
			t.Errorf("%s: the message names the gate's paths: %s", tt.input, v.Message)
		}
	}
	for _, tt := range []struct{ tool, input string }{
		{"Write", `{"file_path":"notes.txt","content":"x"}`},
		{"Edit", `{"file_path":"docs/agents/reviewer.md","old_string":"a","new_string":"b"}`},
		{"Read", `{"file_path":"~/.config/other/settings.json"}`},
		{"Bash", `{"command":"toolgate pending"}`},
		{"Bash", `{"command":"toolgate audit verify"}`},
		{"Bash", `{"command":"go test ./... && git status"}`},
		{"Bash", `{"command":"cat cfgx/notes"}`},
	} {
		if v := s.Evaluate(tt.tool, []byte(tt.input)); v.Effect != api.EffectAllow {
			t.Errorf("%s %s: got %s by %q, want the policy's allow", tt.tool, tt.input, v.Effect, v.RuleID)
		}
	}
}

// The guard denies the command lines it is documented to deny
// (toolgate-guard-commands: "toolgate approve|deny ..." and redirections
// into a protected path) rather than letting them through to the policy.
// Under the default Landlock containment nothing below the command line
// stops them: the first writes Claude Code's user settings (with
// disableAllHooks, every later toolgate run is ungated: see e2e
// TestAttackSwitchRunsHooksOff).
func TestGuardDeniesItsDocumentedCommandLines(t *testing.T) {
	root := t.TempDir()
	home, project := filepath.Join(root, "home"), filepath.Join(root, "project")
	gate := paths.Paths{RuntimeDir: filepath.Join(root, "run", "toolgate"), StateDir: filepath.Join(home, ".local/state/toolgate")}
	for _, d := range []string{project, gate.RuntimeDir, gate.StateDir, filepath.Join(home, ".claude")} {
		os.MkdirAll(d, 0o700)
	}
	g := NewGuard(GuardPaths{Gate: gate, ConfigDir: filepath.Join(home, ".config/toolgate"), Exe: "/opt/toolgate/bin/toolgate",
		ClaudeDir: filepath.Join(home, ".claude"), Project: project})
	s := NewSession(mustParse(t, `{"version":1,"default":"allow","rules":[]}`), nil, project, home)
	s.Guard = g
	for _, command := range []string{
		`cd ~/.claude && echo '{"disableAllHooks":true}' > settings.json`,
		`cd .claude; echo '{"disableAllHooks":true}' > settings.local.json`,
		`sh -c 'toolgate approve apr_01'`,
		`bash -c "toolgate deny apr_01"`,
	} {
		input := `{"command":` + quote(command) + `}`
		if v := s.Evaluate("Bash", []byte(input)); v.RuleID != GuardCommands {
			t.Errorf("%s: got %s by %q, want the guard's deny", command, v.Effect, v.RuleID)
		}
	}
}

func quote(s string) string {
	b := []byte{'"'}
	for _, r := range s {
		switch r {
		case '"', '\\':
			b = append(b, '\\', byte(r))
		default:
			b = append(b, string(r)...)
		}
	}
	return string(append(b, '"'))
}

// What the guard must let through: an assignment alone (a call without
// words), a cd into the project, a mention of toolgate that decides
// nothing.
func TestGuardLetsOrdinaryCommandsThrough(t *testing.T) {
	root := t.TempDir()
	home, project := filepath.Join(root, "home"), filepath.Join(root, "project")
	g := NewGuard(GuardPaths{Gate: paths.Paths{RuntimeDir: filepath.Join(root, "run", "toolgate"), StateDir: filepath.Join(home, ".local/state/toolgate")},
		ClaudeDir: filepath.Join(home, ".claude"), Project: project})
	s := NewSession(mustParse(t, `{"version":1,"default":"allow","rules":[]}`), nil, project, home)
	s.Guard = g
	for _, command := range []string{`A=b`, `cd sub && echo x > out.txt`, `toolgate pending`, `echo hi > /dev/stderr`} {
		if v := s.Evaluate("Bash", []byte(`{"command":`+quote(command)+`}`)); v.Effect != api.EffectAllow {
			t.Errorf("%s: %+v", command, v)
		}
	}
}

// The guard resolves the links of a path the model names, as far as it
// exists. A path of many components that do not exist must not cost the
// daemon time quadratic in its length: at that cost 80 KB of "/a" would
// hold a core for 5 s, 8 MB (an event's bound) for hours.
func TestGuardResolvesALongPathQuickly(t *testing.T) {
	g := NewGuard(GuardPaths{ConfigDir: filepath.Join(t.TempDir(), "config")})
	in, _ := json.Marshal(map[string]string{"file_path": strings.Repeat("/a", 80000)})
	done := make(chan string, 1)
	go func() { rule, _, _ := g.check(Call{Tool: "Read", Input: in, Cwd: "/"}); done <- rule }()
	select {
	case rule := <-done:
		if rule != "" {
			t.Errorf("a path of missing components: denied by %s", rule)
		}
	case <-time.After(3 * time.Second): // a bound on a hang, not a wait for an event
		t.Fatal("the guard still resolves a 160 KB path after 3 s")
	}
}

// resolveLinksOneByOne is resolveLinks as it was: each ancestor tried
// from the longest down.
func resolveLinksOneByOne(p string) string {
	rest := ""
	for dir := p; dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return path.Join(real, rest)
		}
		rest = path.Join(filepath.Base(dir), rest)
	}
	return p
}

// resolveLinks finds what trying each ancestor found: through links to
// directories, links that go up, dangling links, loops, files, missing
// components, relative paths.
func TestGuardResolvesLinksAsBefore(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(target, p string) {
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	mk("d/e/f")
	mk("secret")
	if err := os.WriteFile(filepath.Join(root, "d/file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ln("d/e", "toe")
	ln("../secret", "d/up")
	ln("missing", "dangling")
	ln("loop2", "loop1")
	ln("loop1", "loop2")
	ln(".", "self")
	ln(filepath.Join(root, "secret"), "d/e/abs")
	rel, err := filepath.Rel("/", root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", "d", "d/e/f", "d/e/f/x/y", "toe", "toe/f/x", "d/up", "d/up/x/y",
		"loop1", "loop1/x", "self/self/d/up/z", "d/file", "d/file/x", "d/e/abs/x", "nothing/at/all"} {
		abs := path.Clean(root + "/" + p)
		if got, want := bash.ResolveLinks(abs), resolveLinksOneByOne(abs); got != want {
			t.Errorf("resolveLinks(%s) = %s, want %s", abs, got, want)
		}
	}
	// A dangling link is followed (a Write through it makes its target),
	// and a chain of links too long to resolve ends where it leads.
	for p, want := range map[string]string{"dangling": "missing", "dangling/x": "missing/x", strings.Repeat("self/", 300) + "d/x": "d/x"} {
		if got := bash.ResolveLinks(path.Join(root, p)); got != path.Join(root, want) {
			t.Errorf("resolveLinks(%.80s) = %s, want %s", p, got, path.Join(root, want))
		}
	}
	for _, p := range []string{"/", ".", "..", "../..", "a", "a/b", rel, rel + "/toe/f/x", "../" + rel} {
		if got, want := bash.ResolveLinks(p), resolveLinksOneByOne(p); got != want {
			t.Errorf("resolveLinks(%s) = %s, want %s", p, got, want)
		}
	}
}

// Claude Code's file tools run outside the Bash boundary: the guard keeps
// their writes off what starts code later, at any depth and through links,
// and lets them read it.
func TestGuardKeepsWritesOffWhatStartsCodeLater(t *testing.T) {
	root := t.TempDir()
	project, home := root+"/project", root+"/home"
	for _, d := range []string{project + "/.git/hooks", project + "/sub", home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(home, project+"/d"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(project+"/.git/config", project+"/cfg"); err != nil {
		t.Fatal(err)
	}
	g := NewGuard(GuardPaths{Project: project})
	for _, tt := range []struct {
		tool, path string
		denied     bool
	}{
		{"Write", ".git/config", true},
		{"Edit", ".git/hooks/pre-commit", true},
		{"Edit", "cfg", true},
		{"Write", "sub/.claude/skills/x/SKILL.md", true},
		{"Write", "sub/.mcp.json", true},
		{"Write", "d/.bashrc", true},
		{"Write", home + "/.profile", true},
		{"Write", "d/.claude.json", true},
		{"Write", "d/.config/systemd/user/x.service", true},
		{"Read", ".git/config", false},
		{"Read", "d/.bashrc", false},
		{"Write", "main.go", false},
		{"Write", ".github/workflows/ci.yml", false},
		{"Write", "docs/.mcp.json.md", false},
	} {
		input, _ := json.Marshal(map[string]string{"file_path": tt.path})
		_, why, denied := g.check(Call{Tool: tt.tool, Input: input, Cwd: project, Project: project, Home: home})
		if denied != tt.denied {
			t.Errorf("%s %s: denied %v (%s), want %v", tt.tool, tt.path, denied, why, tt.denied)
		}
	}
}

// With the session's writable trees given, a write tool writes only in
// them, as written and through links: what its Bash commands may.
func TestGuardHoldsWriteToolsToTheWritableTrees(t *testing.T) {
	root := t.TempDir()
	project, home, tmp := root+"/project", root+"/home", root+"/tmp"
	for _, d := range []string{project, home, tmp} {
		os.MkdirAll(d, 0o755)
	}
	os.Symlink(home, project+"/d")
	g := NewGuard(GuardPaths{Project: project, Writable: []string{project, tmp}})
	for _, tt := range []struct {
		tool, path string
		denied     bool
	}{
		{"Write", "main.go", false},
		{"Write", tmp + "/scratch", false},
		{"Edit", home + "/.gitconfig", true},
		{"Write", home + "/.local/bin/git", true},
		{"Write", "d/.ssh/config", true},
		{"Write", "/etc/passwd", true},
		{"Read", home + "/.gitconfig", false},
	} {
		input, _ := json.Marshal(map[string]string{"file_path": tt.path})
		_, why, denied := g.check(Call{Tool: tt.tool, Input: input, Cwd: project, Project: project, Home: home})
		if denied != tt.denied {
			t.Errorf("%s %s: denied %v (%s), want %v", tt.tool, tt.path, denied, why, tt.denied)
		}
	}
}
