package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/modelscript"
)

// The user's own --settings beside run's: Claude Code takes the last
// --settings layer alone (2.1.332), so run's, with its hooks, was dropped,
// and a Read the policy denies ran, with a report of 0 calls and exit 0.
// run refuses the argument (exit 64).
func TestUserSettingsArgKeepsTheGate(t *testing.T) {
	forTransports(t, func(t *testing.T, transport string) {
		w := newWorld(t)
		secret := w.writeFile("secret.txt", "the secret")
		userSettings := filepath.Join(w.root, "my-settings.json")
		if err := os.WriteFile(userSettings, []byte(`{"cleanupPeriodDays": 30}`), 0o600); err != nil {
			t.Fatal(err)
		}
		policy := `{"version": 1, "default": "allow", "rules": [
		  {"id": "deny-secret", "effect": "deny", "tool": "Read", "input": {"file_path": {"const": "` + secret + `"}}, "reason_code": "secret_file"}]}`
		r := w.run(runArgs{transport: transport, policy: policy, claudeArgs: []string{"--settings", userSettings},
			script: []modelscript.Step{step(w.readFile("toolu_read", "secret.txt"))}})
		if res, ok := r.model.ToolResults()["toolu_read"]; ok && strings.Contains(res.Text, "the secret") {
			t.Errorf("with the user's --settings, a Read the policy denies ran: the model saw %q (report: %d calls, exit %d)", res.Text, r.report.Counts.Calls, r.code)
		}
		if r.code != 64 || !strings.Contains(r.stderr, "--settings") {
			t.Errorf("exit %d, want 64 with a word on --settings", r.code)
		}
	})
}
