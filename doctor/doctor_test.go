package doctor

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/supervisor"
)

func byName(checks []Check) map[string]Check {
	m := map[string]Check{}
	for _, c := range checks {
		m[c.Name] = c
	}
	return m
}

func TestDoctor(t *testing.T) {
	root := t.TempDir()
	rt := filepath.Join(root, "rt")
	os.MkdirAll(rt, 0o755) // wrong: the runtime directory must be 0700
	os.WriteFile(filepath.Join(rt, "gate.sock"), []byte("x"), 0o600)
	home := filepath.Join(root, "home")
	os.MkdirAll(filepath.Join(home, ".claude"), 0o700)
	os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(`{"hooks":{"PreToolUse":[]}}`), 0o600)
	checks := byName(Run(context.Background(), Config{
		Paths:  supervisor.Paths{RuntimeDir: rt, StateDir: filepath.Join(root, "state")},
		Claude: "no-such-claude-here", Tested: []string{"2.1.332"}, Cwd: root, Home: home,
	}))
	for name, want := range map[string]string{"claude": Fail, "sockets": Fail, "daemon": OK, "ledger": OK,
		"user settings": Warn, "project settings": OK, "notifications": Warn} {
		if got := checks[name]; got.Status != want {
			t.Errorf("%s: %+v, want %s", name, got, want)
		}
		if c := checks[name]; c.Status != OK && c.Fix == "" {
			t.Errorf("%s: a problem without a fix: %+v", name, c)
		}
	}
}
