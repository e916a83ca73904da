package e2e

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// toolgate demo runs end to end with the real CLI and explains the audit,
// and does so again on the same ledger (tool_use_ids run once, ever).
func TestDemo(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var out []byte
	for range 2 {
		cmd := exec.Command(toolgateBin, "demo", "--auto-approve", "1s")
		cmd.Env = append(w.env(nil), "TOOLGATE_CLAUDE="+claudeBin)
		var err error
		if out, err = cmd.CombinedOutput(); err != nil {
			t.Fatalf("toolgate demo: %v\n%s", err, out)
		}
	}
	contains(t, "the demo's output", string(out),
		"toolu_demo_01_allow", "ran once", "Rule allow-touch allowed it",
		"toolu_demo_02_env", "secret_file", "Rule deny-env denied it",
		"toolu_demo_03_pr", "schema_invalid", "the MCP server was never called",
		"toolu_demo_04_ask", "approved it (--auto-approve)", "user:",
		"toolgate run exited 77")
	if strings.Contains(string(out), "this-secret-must-never-reach-the-model") {
		t.Error("the demo's secret was printed")
	}
}

// The README's first screen gives exactly two commands, and they are the
// ones CI runs.
func TestReadmeCommandsAreWhatCIRuns(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)## Try it.*?```sh\n(.*?)```").FindSubmatch(readme)
	if block == nil {
		t.Fatal("the README has no Try it block")
	}
	commands := strings.Split(strings.TrimSpace(string(block[1])), "\n")
	if len(commands) != 2 {
		t.Fatalf("the README gives %d set-up commands, want exactly 2: %q", len(commands), commands)
	}
	for _, c := range commands {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(c) + `$`).Match(ci) {
			t.Errorf(".ci/run does not run the README's %q", c)
		}
	}
	if i := strings.Index(string(readme), "## Try it"); i < 0 || strings.Count(string(readme[:i]), "\n") > 25 {
		t.Errorf("the two commands must be on the README's first screen")
	}
}
