package toolgate_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// toolgate is Linux-only (docs/development.md): a build for another
// system stops at a line that says so, for the CLI and for the hook,
// rather than at whichever Linux call it meets first.
func TestABuildForAnotherSystemSaysLinuxOnly(t *testing.T) {
	for _, pkg := range []string{"./cmd/toolgate", "./cmd/toolgate-hook"} {
		cmd := exec.Command("go", "build", "-o", os.DevNull, pkg)
		cmd.Env = append(os.Environ(), "GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("%s built for darwin: toolgate does not run there", pkg)
			continue
		}
		if !strings.Contains(string(out), "toolgate_runs_on_Linux_only") {
			t.Errorf("%s for darwin fails without saying toolgate is Linux-only:\n%s", pkg, out)
		}
	}
}
