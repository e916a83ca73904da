package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/install"
	"github.com/toolgate/toolgate/internal/dbustest"
	"github.com/toolgate/toolgate/paths"
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
		Paths:  paths.Paths{RuntimeDir: rt, StateDir: filepath.Join(root, "state")},
		Claude: "no-such-claude-here", Tested: []string{"2.1.332"}, Cwd: root, Home: home,
		UserSettings: filepath.Join(home, ".claude", "settings.json"),
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

// An installed hook whose policy no longer loads fails the check, with the fix.
func TestDoctorChecksTheInstalledHook(t *testing.T) {
	root := t.TempDir()
	hook := filepath.Join(root, "toolgate-hook")
	os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o700)
	policyFile := filepath.Join(root, "policy.json")
	os.WriteFile(policyFile, []byte(`{"version": 1, "default": "allow", "rules": []}`), 0o600)
	settings := install.ProjectSettings(root)
	opts := install.Options{Hook: hook, Policy: "policy.json", ApprovalTimeout: time.Minute}
	if _, err := install.InstallFile(settings, opts); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Paths: paths.Paths{RuntimeDir: filepath.Join(root, "rt"), StateDir: root}, Claude: "no-such-claude-here",
		Cwd: root, Home: root, UserSettings: filepath.Join(root, "none.json")}
	if c := byName(Run(context.Background(), cfg))["project settings"]; c.Status != OK || !strings.Contains(c.Detail, "installed (6 events)") {
		t.Errorf("a good install: %+v", c)
	}
	os.WriteFile(policyFile, []byte(`{"version": 1, "default": "perhaps"}`), 0o600)
	if c := byName(Run(context.Background(), cfg))["project settings"]; c.Status != Fail || !strings.Contains(c.Fix, "toolgate policy check "+policyFile) {
		t.Errorf("an invalid installed policy: %+v", c)
	}
	os.Remove(hook)
	if c := byName(Run(context.Background(), cfg))["project settings"]; c.Status != Fail || !strings.Contains(c.Detail, "hook binary is missing") {
		t.Errorf("a missing hook: %+v", c)
	}
}

// The notifications check asks the session bus for a notification service:
// a bus without one is a warning, with where else to approve.
func TestDoctorAsksTheBus(t *testing.T) {
	root := t.TempDir()
	cfg := Config{Paths: paths.Paths{RuntimeDir: filepath.Join(root, "rt"), StateDir: root}, Claude: "no-such-claude-here",
		Cwd: root, Home: root, UserSettings: filepath.Join(root, "none.json"), DBusAddress: dbustest.SessionBus(t)}
	c := byName(Run(context.Background(), cfg))["notifications"]
	if c.Status != Warn || !strings.Contains(c.Detail, "no notification service") || !strings.Contains(c.Fix, "toolgate watch") {
		t.Errorf("a bus without a notification service: %+v", c)
	}
	cfg.DBusAddress = "unix:path=" + filepath.Join(root, "nobus")
	if c := byName(Run(context.Background(), cfg))["notifications"]; c.Status != Warn || !strings.Contains(c.Detail, "cannot be reached") {
		t.Errorf("a bus that is not there: %+v", c)
	}
}

// The containment check names what a session gets here, and what to
// install when Claude Code's sandbox cannot run.
func TestContainmentCheck(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // neither bwrap nor socat
	c := checkContainment(filepath.Join(t.TempDir(), "no-toolgate-bash"))
	if c.Status != Warn || !strings.Contains(c.Fix, "apt-get install bubblewrap socat") || !strings.Contains(c.Detail, "installed sessions: none") {
		t.Errorf("%+v", c)
	}
	if !strings.Contains(c.Detail, "toolgate run: landlock") || !strings.Contains(c.Detail, "no Bash boundary") || !strings.Contains(c.Fix, "toolgate-bash beside toolgate-hook") {
		t.Errorf("without toolgate-bash, run has no Bash boundary and doctor says so: %+v", c)
	}
}

// The default policy, which toolgate run uses when given none: missing is
// a warning that says how to get one, invalid a failure, loadable ok.
func TestDoctorChecksTheDefaultPolicy(t *testing.T) {
	root := t.TempDir()
	policyFile := filepath.Join(root, "policy.json")
	cfg := Config{Paths: paths.Paths{RuntimeDir: filepath.Join(root, "rt"), StateDir: root}, Policy: policyFile,
		Claude: "no-such-claude-here", Cwd: root, Home: root, UserSettings: filepath.Join(root, "none.json")}
	if c := byName(Run(context.Background(), cfg))["policy"]; c.Status != Warn || !strings.Contains(c.Fix, "toolgate policy init") {
		t.Errorf("no default policy: %+v", c)
	}
	os.WriteFile(policyFile, []byte(`{"version": 1, "default": "perhaps", "rules": []}`), 0o600)
	if c := byName(Run(context.Background(), cfg))["policy"]; c.Status != Fail || !strings.Contains(c.Fix, "toolgate policy check "+policyFile) {
		t.Errorf("an invalid default policy: %+v", c)
	}
	os.WriteFile(policyFile, []byte(`{"version": 3, "default": "ask", "rules": []}`), 0o600)
	if c := byName(Run(context.Background(), cfg))["policy"]; c.Status != OK || !strings.Contains(c.Detail, "version 3, 0 rules, default ask") {
		t.Errorf("a good default policy: %+v", c)
	}
}

// doctor says how long an ask may wait, a rule's approval_timeout
// included, and that Claude Code waits longer for the answer.
func TestDoctorChecksTheTimeoutsOfTheDefaultPolicy(t *testing.T) {
	root := t.TempDir()
	policyFile := filepath.Join(root, "policy.json")
	os.WriteFile(policyFile, []byte(`{"version": 1, "default": "ask", "rules": [
		{"id": "slow", "effect": "ask", "tool": "Bash", "approval_timeout": "1h"}]}`), 0o600)
	cfg := Config{Paths: paths.Paths{RuntimeDir: filepath.Join(root, "rt"), StateDir: root}, Policy: policyFile,
		Claude: "no-such-claude-here", Cwd: root, Home: root, UserSettings: filepath.Join(root, "none.json"),
		ApprovalWait: 15 * time.Minute}
	c := checkTimeouts(cfg)
	if c.Status != OK || !strings.Contains(c.Detail, "a rule of "+policyFile+" asks for 1h0m0s") ||
		!strings.Contains(c.Detail, "wait 1h5m0s for an ask's answer, past the longest wait (1h0m0s)") {
		t.Errorf("timeouts: %+v", c)
	}
}
