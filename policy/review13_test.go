package policy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/api"
)

// Review 13, attack O: command lines the guard is documented to deny
// (toolgate-guard-commands: "toolgate approve|deny ..." and redirections
// into a protected path) that it lets through to the policy. Under the
// default Landlock containment nothing below the command line stops them:
// the first writes Claude Code's user settings (with disableAllHooks, every
// later toolgate run is ungated: see e2e TestReviewAttackSwitchRunsHooksOff).
func TestReviewGuardMissesCommandLines(t *testing.T) {
	root := t.TempDir()
	home, project := filepath.Join(root, "home"), filepath.Join(root, "project")
	gate := api.Paths{RuntimeDir: filepath.Join(root, "run", "toolgate"), StateDir: filepath.Join(home, ".local/state/toolgate")}
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
	g := NewGuard(GuardPaths{Gate: api.Paths{RuntimeDir: filepath.Join(root, "run", "toolgate"), StateDir: filepath.Join(home, ".local/state/toolgate")},
		ClaudeDir: filepath.Join(home, ".claude"), Project: project})
	s := NewSession(mustParse(t, `{"version":1,"default":"allow","rules":[]}`), nil, project, home)
	s.Guard = g
	for _, command := range []string{`A=b`, `cd sub && echo x > out.txt`, `toolgate pending`, `echo hi > /dev/stderr`} {
		if v := s.Evaluate("Bash", []byte(`{"command":`+quote(command)+`}`)); v.Effect != api.EffectAllow {
			t.Errorf("%s: %+v", command, v)
		}
	}
}
