package contain

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// shellUnderTest is toolgate-bash, built once for the package's tests.
var shellUnderTest string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolgate-bash-test-")
	if err != nil {
		panic(err)
	}
	shellUnderTest = filepath.Join(dir, ShellName)
	build := exec.Command("go", "build", "-o", shellUnderTest, "../cmd/toolgate-bash")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		panic("build toolgate-bash (it needs a C compiler: apt-get install gcc): " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// inBoundary runs script with toolgate-bash in b and returns its exit code
// and output.
func inBoundary(t *testing.T, b Boundary, dir, script string) (int, string) {
	t.Helper()
	enc, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(shellUnderTest, "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), BoundaryEnv+"="+enc)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

func TestEncodeRefusesWhatTheShellCannotRead(t *testing.T) {
	for _, p := range []string{"relative", "/a\nw /", ""} {
		if _, err := (Boundary{Writable: []string{p}}).Encode(); err == nil {
			t.Errorf("Encode took %q", p)
		}
	}
	got, err := Boundary{Writable: []string{"/p/"}, Projects: []string{"/p"}, NoNetwork: true, Shell: "/bin/sh"}.Encode()
	if err != nil || got != "w /p\np /p\nx /bin/sh\nn\n" {
		t.Errorf("Encode: %q %v", got, err)
	}
}

// A command writes in the writable trees only; in a project, git's config
// and hooks, .claude and .mcp.json are read-only, and .git stays where it
// is; Unix sockets are refused, and with NoNetwork every socket.
func TestBashBoundary(t *testing.T) {
	root := t.TempDir()
	project, outside := filepath.Join(root, "project"), filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(project, ".git", "hooks"), filepath.Join(project, ".claude"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(project, ".git", "config"), filepath.Join(project, ".mcp.json")} {
		if err := os.WriteFile(f, []byte("kept\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := Boundary{Writable: append([]string{project}, Devices...), Projects: []string{project}}
	tries := []struct {
		script string
		ok     bool
	}{
		{"echo x > work.txt && mkdir -p sub/dir && echo y > sub/dir/f && rm work.txt", true},
		{"echo x > /dev/null", true},
		{"echo x > /dev/shm/left-behind", false},
		{"echo x >> .git/config", false},
		{"echo x > .git/hooks/pre-commit", false},
		{"mv .git .git-aside", false},
		{"rm -rf .git", false},
		{"echo x > .claude/settings.json", false},
		{"echo x > .mcp.json", false},
		{"mv .mcp.json elsewhere.json", false},
		{"echo x > " + outside + "/f", false},
		{"ln -s " + outside + " link && echo x > link/f", false},
		{"exec 3<>/dev/tcp/127.0.0.1/1 2>/dev/null; [ $? -ne 126 ]", true}, // TCP may be tried (refused by nothing listening)
	}
	for _, tr := range tries {
		code, out := inBoundary(t, b, project, tr.script)
		if (code == 0) != tr.ok {
			t.Errorf("%s: exit %d (%s); want it to %s", tr.script, code, strings.TrimSpace(out), map[bool]string{true: "succeed", false: "fail"}[tr.ok])
		}
	}
	if data, _ := os.ReadFile(filepath.Join(project, ".git", "config")); string(data) != "kept\n" {
		t.Errorf(".git/config now holds %q", data)
	}
	if entries, _ := os.ReadDir(outside); len(entries) > 0 {
		t.Errorf("a command wrote outside: %v", entries)
	}
	if _, err := exec.LookPath("python3"); err == nil {
		unix := `python3 -c 'import socket; socket.socket(socket.AF_UNIX)'`
		if code, out := inBoundary(t, b, project, unix); code == 0 || !strings.Contains(out, "Operation not permitted") {
			t.Errorf("a Unix socket in the boundary: exit %d, %s", code, out)
		}
		inet := `python3 -c 'import socket; socket.socket(socket.AF_INET)'`
		if code, out := inBoundary(t, b, project, inet); code != 0 {
			t.Errorf("a TCP socket with the network on: exit %d, %s", code, out)
		}
		b.NoNetwork = true
		if code, out := inBoundary(t, b, project, inet); code == 0 || !strings.Contains(out, "Operation not permitted") {
			t.Errorf("a TCP socket with no network: exit %d, %s", code, out)
		}
	}
}

// The boundary fails closed: no description, or one it cannot read, and
// the command does not run.
func TestBashBoundaryFailsClosed(t *testing.T) {
	ran := filepath.Join(t.TempDir(), "ran")
	for _, env := range []string{"", BoundaryEnv + "=", BoundaryEnv + "=w relative", BoundaryEnv + "=q /x"} {
		cmd := exec.Command(shellUnderTest, "-c", "touch "+ran)
		cmd.Env = append(os.Environ(), env)
		if env == "" {
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		}
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 126 || !strings.Contains(string(out), "boundary_failed") {
			t.Errorf("%q: %v %s; want exit 126 and boundary_failed", env, err, out)
		}
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("a command ran without a boundary")
	}
}

// A protected path that is a link is refused: its target could be pinned,
// the link itself not.
func TestBashBoundaryRefusesALinkedProtectedPath(t *testing.T) {
	project := t.TempDir()
	if err := os.Symlink(t.TempDir(), filepath.Join(project, ".claude")); err != nil {
		t.Fatal(err)
	}
	code, out := inBoundary(t, Boundary{Writable: []string{project}, Projects: []string{project}}, project, "true")
	if code != 126 || !strings.Contains(out, "is a link") {
		t.Errorf("a linked .claude: exit %d, %s; want 126, is a link", code, out)
	}
}

// BenchmarkBashBoundary times what a Bash command costs in the boundary
// against bash alone, interleaved, one command a round: bash -c true (the
// floor); toolgate-bash -c true with the part each command of a toolgate
// run session enters (Landlock writes, the system-call filter); and with
// the namespaced part too, as a session without run's namespace would
// enter it per command. Medians; the difference to the floor is what a
// command pays.
func BenchmarkBashBoundary(b *testing.B) {
	project := b.TempDir()
	os.MkdirAll(filepath.Join(project, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(project, ".git", "config"), nil, 0o644)
	perCommand, _ := Boundary{Writable: append([]string{project, b.TempDir()}, Devices...)}.Encode()
	namespaced, _ := Boundary{Writable: append([]string{project, b.TempDir()}, Devices...), Projects: []string{project}}.Encode()
	variants := []struct {
		name string
		cmd  func() *exec.Cmd
	}{
		{"bash", func() *exec.Cmd { return exec.Command("/bin/bash", "-c", "true") }},
		{"boundary", func() *exec.Cmd {
			c := exec.Command(shellUnderTest, "-c", "true")
			c.Env = append(os.Environ(), BoundaryEnv+"="+perCommand)
			return c
		}},
		{"namespaced", func() *exec.Cmd {
			c := exec.Command(shellUnderTest, "-c", "true")
			c.Env = append(os.Environ(), BoundaryEnv+"="+namespaced)
			return c
		}},
	}
	times := map[string][]float64{}
	for b.Loop() {
		for _, v := range variants {
			c := v.cmd()
			c.Dir = project
			start := time.Now()
			if out, err := c.CombinedOutput(); err != nil {
				b.Fatalf("%s: %v %s", v.name, err, out)
			}
			times[v.name] = append(times[v.name], float64(time.Since(start).Microseconds())/1000)
		}
	}
	med := func(xs []float64) float64 { slices.Sort(xs); return xs[len(xs)/2] }
	floor := med(times["bash"])
	b.ReportMetric(floor, "bash_ms")
	for _, name := range []string{"boundary", "namespaced"} {
		m := med(times[name])
		b.ReportMetric(m, name+"_ms")
		b.ReportMetric(m-floor, name+"_added_ms")
	}
}
