package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/api"
)

// The guard denies what touches the gate itself, whatever the policy
// allows; everything else goes on to the policy.
func TestGuard(t *testing.T) {
	root := t.TempDir()
	home, project := filepath.Join(root, "home"), filepath.Join(root, "project")
	gate := api.Paths{RuntimeDir: filepath.Join(root, "run", "toolgate"), StateDir: filepath.Join(home, ".local/state/toolgate")}
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
