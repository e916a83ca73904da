package contain

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// containArgv, in the test binary's environment, makes it Contain that
// command line (fields separated by US, \x1f) instead of running the tests; it exits 111
// when Contain returns, with the error on stderr.
const containArgv = "TOOLGATE_TEST_CONTAIN_ARGV"

// containParent overrides the parent pid the helper gives Contain.
const containParent = "TOOLGATE_TEST_CONTAIN_PARENT"

func containHelper(argv []string) {
	parent := os.Getppid()
	if p := os.Getenv(containParent); p != "" {
		parent, _ = strconv.Atoi(p)
	}
	env := without(os.Environ(), containArgv+"=", containParent+"=")
	err := Contain(argv, env, parent, nil)
	fmt.Fprintln(os.Stderr, err)
	os.Exit(111)
}

func without(env []string, prefixes ...string) []string {
	var out []string
	for _, kv := range env {
		keep := true
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

// contained runs argv through Contain in a child of the test and returns
// its exit code and output.
func contained(t *testing.T, extraEnv []string, argv ...string) (int, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(append(os.Environ(), containArgv+"="+strings.Join(argv, "\x1f")), extraEnv...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// What claude runs in the domain cannot signal a process outside it (the
// gate, toolgate run, a person's shell): Landlock scopes signals. It still
// signals its own.
func TestContainedCannotSignalOutside(t *testing.T) {
	if abi := LandlockABI(); abi < landlockScopedABI {
		t.Fatalf("this kernel offers Landlock ABI %d; toolgate run's containment needs %d", abi, landlockScopedABI)
	}
	outside := exec.Command("sleep", "600")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { outside.Process.Kill(); outside.Wait() }()
	code, out := contained(t, nil, "/bin/sh", "-c", fmt.Sprintf(`kill -0 $$ || exit 3; kill -TERM %d && exit 4; exit 0`, outside.Process.Pid))
	if code != 0 {
		t.Fatalf("contained shell: exit %d (3: it could not signal itself, 4: it signalled a process outside): %s", code, out)
	}
	if outside.ProcessState != nil {
		t.Fatal("the process outside the domain ended")
	}
}

// A process in the domain cannot leave it: Landlock domains only narrow,
// and no_new_privs keeps a set-user-ID program from running with more.
func TestContainedStaysContained(t *testing.T) {
	code, out := contained(t, nil, "/bin/sh", "-c", "grep -q '^NoNewPrivs:[[:space:]]*1' /proc/self/status")
	if code != 0 {
		t.Fatalf("no_new_privs is not set in the domain (exit %d): %s", code, out)
	}
}

// Contain does not start the command once toolgate run (its parent) is
// gone: the command would run unsupervised.
func TestContainRefusesAnOrphan(t *testing.T) {
	mark := t.TempDir() + "/ran"
	code, out := contained(t, []string{containParent + "=1"}, "/bin/sh", "-c", "touch "+mark)
	if code != 111 || !strings.Contains(out, "toolgate run is gone") {
		t.Fatalf("exit %d, %q; want 111 and toolgate run is gone", code, out)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the command ran without its parent")
	}
}

func TestForRunModes(t *testing.T) {
	if _, err := ForRun("sandbox", Shell{}, Boundary{}); err == nil || !strings.Contains(err.Error(), "must be auto, strict, landlock or off") {
		t.Errorf("an unknown mode: %v", err)
	}
	off, err := ForRun(Off, Shell{}, Boundary{})
	if err != nil || off.Contained() || off.Bounded() || off.Name != LevelNone {
		t.Errorf("off: %+v, %v", off, err)
	}
	ll, err := ForRun(Landlock, Shell{}, Boundary{})
	if err != nil || !ll.Contained() || ll.Bounded() || ll.Name != LevelLandlock {
		t.Errorf("landlock: %+v, %v", ll, err)
	}
}
