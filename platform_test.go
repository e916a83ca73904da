package toolgate_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// toolgate is Linux-only (docs/development.md): a build for another
// system stops at a line that says so, for the CLI and for the hook,
// rather than at whichever Linux call it meets first. Both link package
// paths, whose guard is compiled almost first (it needs only the standard
// library and x/sys): the test builds that package for darwin, not the
// whole tree, which would cost CI a minute and a half of compiling.
func TestABuildForAnotherSystemSaysLinuxOnly(t *testing.T) {
	darwin := append(os.Environ(), "GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=0")
	const guard = "github.com/toolgate/toolgate/paths"
	for _, pkg := range []string{"./cmd/toolgate", "./cmd/toolgate-hook"} {
		list := exec.Command("go", "list", "-deps", pkg)
		list.Env = darwin
		out, err := list.Output()
		if err != nil {
			t.Fatalf("go list -deps %s for darwin: %v", pkg, err)
		}
		if !strings.Contains("\n"+string(out), "\n"+guard+"\n") {
			t.Errorf("%s for darwin does not link %s, whose build says toolgate is Linux-only", pkg, guard)
		}
	}
	build := exec.Command("go", "build", "-o", os.DevNull, "./paths")
	build.Env = darwin
	out, err := build.CombinedOutput()
	if err == nil {
		t.Fatal("package paths built for darwin: toolgate does not run there")
	}
	if !strings.Contains(string(out), "toolgate_runs_on_Linux_only") {
		t.Errorf("package paths for darwin fails without saying toolgate is Linux-only:\n%s", out)
	}
	// What paths needs of the system comes before any other package of
	// toolgate's: the standard library and x/sys alone.
	deps := exec.Command("go", "list", "-deps", "./paths")
	deps.Env = darwin
	if out, err := deps.Output(); err != nil || strings.Contains(strings.ReplaceAll(string(out), guard+"\n", ""), "github.com/toolgate/") {
		t.Errorf("package paths depends on another of toolgate's (%v):\n%s", err, out)
	}
}
