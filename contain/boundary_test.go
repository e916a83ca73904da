package contain

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// shellUnderTest is toolgate-bash, built once for the package's tests;
// shells are the two ways a command enters the boundary, with it and with
// toolgate-bash.so.
var (
	shellUnderTest string
	shells         map[string]Shell
)

func TestMain(m *testing.M) {
	if argv := os.Getenv(containArgv); argv != "" {
		containHelper(strings.Split(argv, "\x1f"))
	}
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
	// As scripts/build makes it.
	preload := filepath.Join(dir, PreloadName)
	build = exec.Command("gcc", "-O2", "-Wall", "-shared", "-fPIC", "-DTOOLGATE_PRELOAD", "-o", preload, "../cmd/toolgate-bash/boundary.c", "-ldl")
	if out, err := build.CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		panic("build " + PreloadName + " (it needs a C compiler: apt-get install gcc): " + err.Error())
	}
	linked, err := SessionShell(shellUnderTest, dir)
	if err != nil || linked.Preload != preload {
		panic(fmt.Sprintf("SessionShell beside %s: %+v, %v", PreloadName, linked, err))
	}
	shells = map[string]Shell{ShellName: {Path: shellUnderTest}, PreloadName: linked}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// forShells runs test once with each of shells.
func forShells(t *testing.T, test func(t *testing.T, sh Shell)) {
	for name, sh := range shells {
		t.Run(name, func(t *testing.T) { test(t, sh) })
	}
}

// inBoundary runs script with sh in b and returns its exit code and
// output.
func inBoundary(t *testing.T, sh Shell, b Boundary, dir, script string) (int, string) {
	t.Helper()
	enc, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh.Path, "-c", script)
	cmd.Dir = dir
	cmd.Env = sh.Env(os.Environ(), enc)
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
	forShells(t, testBashBoundary)
}

func testBashBoundary(t *testing.T, sh Shell) {
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
		code, out := inBoundary(t, sh, b, project, tr.script)
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
		if code, out := inBoundary(t, sh, b, project, unix); code == 0 || !strings.Contains(out, "Operation not permitted") {
			t.Errorf("a Unix socket in the boundary: exit %d, %s", code, out)
		}
		inet := `python3 -c 'import socket; socket.socket(socket.AF_INET)'`
		if code, out := inBoundary(t, sh, b, project, inet); code != 0 {
			t.Errorf("a TCP socket with the network on: exit %d, %s", code, out)
		}
		b.NoNetwork = true
		if code, out := inBoundary(t, sh, b, project, inet); code == 0 || !strings.Contains(out, "Operation not permitted") {
			t.Errorf("a TCP socket with no network: exit %d, %s", code, out)
		}
	}
}

// The boundary fails closed: no description, or one it cannot read, and
// the command does not run.
func TestBashBoundaryFailsClosed(t *testing.T) {
	forShells(t, func(t *testing.T, sh Shell) {
		ran := filepath.Join(t.TempDir(), "ran")
		for _, boundary := range []string{"", "w relative", "q /x"} {
			cmd := exec.Command(sh.Path, "-c", "touch "+ran)
			cmd.Env = sh.Env([]string{"PATH=" + os.Getenv("PATH")}, boundary)
			if boundary == "" {
				cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, BoundaryEnv+"=") })
			}
			out, err := cmd.CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 126 || !strings.Contains(string(out), "boundary_failed") {
				t.Errorf("%q: %v %s; want exit 126 and boundary_failed", boundary, err, out)
			}
		}
		if _, err := os.Stat(ran); err == nil {
			t.Error("a command ran without a boundary")
		}
	})
}

// toolgate-bash.so acts in the shell Claude Code starts (executed at the
// link, whatever its argv[0]) and nowhere else: another program (claude
// itself, a hook's /bin/sh, an MCP server) runs as it would without it,
// and what the command runs does not load it again; a preload of the
// person's stays.
func TestPreloadBoundsTheSessionsShellOnly(t *testing.T) {
	sh := shells[PreloadName]
	project, outside := t.TempDir(), t.TempDir()
	enc, _ := Boundary{Writable: []string{project}}.Encode()
	other := exec.Command(DefaultShell, "-c", "touch "+outside+"/claude-wrote")
	other.Env = sh.Env(os.Environ(), enc)
	if out, err := other.CombinedOutput(); err != nil {
		t.Errorf("a program that is not the session's shell, with the preload: %v %s", err, out)
	}
	theirs := filepath.Join(t.TempDir(), "theirs.so")
	build := exec.Command("gcc", "-shared", "-fPIC", "-o", theirs, "-x", "c", "-")
	build.Stdin = strings.NewReader("int theirs;\n")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	cmd := exec.Command(sh.Path, "-c", `echo "$LD_PRELOAD"; touch `+outside+`/model-wrote; env -u LD_PRELOAD `+DefaultShell+` -c 'touch `+outside+`/child-wrote'`)
	cmd.Dir = project
	cmd.Env = sh.Env(append(os.Environ(), "LD_PRELOAD="+theirs), enc)
	out, _ := cmd.CombinedOutput()
	if got := strings.SplitN(string(out), "\n", 2)[0]; got != theirs {
		t.Errorf("the command's LD_PRELOAD is %q; want the person's %s alone", got, theirs)
	}
	// Started at the link under another name, it is the shell still.
	renamed := exec.Command(sh.Path, "-c", "echo x > "+outside+"/renamed-wrote")
	renamed.Args[0] = "bash"
	renamed.Env = sh.Env(os.Environ(), enc)
	renamed.Run()
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 || entries[0].Name() != "claude-wrote" {
		t.Errorf("outside the boundary: %v; want claude-wrote alone (%s)", entries, out)
	}
}

// A directory of the session's own is empty inside, whatever is kept
// there outside; the snapshot-making "-c -l" writes in it, and what it
// writes stays inside.
func TestOwnDirectoryKeepsTheSessionsWritesInside(t *testing.T) {
	forShells(t, func(t *testing.T, sh Shell) {
		project, snapshots := t.TempDir(), t.TempDir()
		theirs := filepath.Join(snapshots, "snapshot-bash-theirs.sh")
		if err := os.WriteFile(theirs, []byte("# theirs\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		enc, err := Boundary{Writable: append([]string{project}, Devices...), Projects: []string{project}, Snapshots: snapshots, Own: []string{snapshots}}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		script := `ls -A ` + snapshots + `; echo '# ours' > ` + snapshots + `/snapshot-bash-ours.sh && echo made; echo '# ours' >> ` + theirs + `; cat ` + snapshots + `/*`
		cmd := exec.Command(sh.Path, "-c", "-l", script)
		cmd.Dir = project
		cmd.Env = sh.Env(append(os.Environ(), "HOME="+t.TempDir()), enc) // a login shell reads HOME's profile
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "made\n# ours\n# ours" {
			t.Errorf("inside: %v %q; want an empty directory the snapshot is made in", err, out)
		}
		entries, _ := os.ReadDir(snapshots)
		if got, _ := os.ReadFile(theirs); len(entries) != 1 || string(got) != "# theirs\n" {
			t.Errorf("outside: %v, theirs holds %q", entries, got)
		}
	})
}

// A run never claims a boundary bash did not enter: a preload the dynamic
// loader passes over (not an object, say) fails the probe.
func TestProbeFindsAPreloadPassedOver(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, PreloadName)
	if err := os.WriteFile(broken, []byte("not an object\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sh := Shell{Path: shells[PreloadName].Path, Preload: broken}
	if err := Probe(sh, Boundary{Writable: []string{dir}}); err == nil || !strings.Contains(err.Error(), "outside the boundary") {
		t.Errorf("Probe with a broken preload: %v; want bash ran outside the boundary", err)
	}
	if err := Probe(shells[PreloadName], Boundary{Writable: []string{dir}}); err != nil {
		t.Errorf("Probe: %v", err)
	}
}

// A protected path that is a link is refused: its target could be pinned,
// the link itself not.
func TestBashBoundaryRefusesALinkedProtectedPath(t *testing.T) {
	project := t.TempDir()
	if err := os.Symlink(t.TempDir(), filepath.Join(project, ".claude")); err != nil {
		t.Fatal(err)
	}
	forShells(t, func(t *testing.T, sh Shell) {
		code, out := inBoundary(t, sh, Boundary{Writable: []string{project}, Projects: []string{project}}, project, "true")
		if code != 126 || !strings.Contains(out, "is a link") {
			t.Errorf("a linked .claude: exit %d, %s; want 126, is a link", code, out)
		}
	})
}

// BenchmarkBashBoundary times what a Bash command costs in the boundary
// against bash alone, interleaved, one command a round: bash -c true (the
// floor); the part each command of a toolgate run session enters (Landlock
// writes, the system-call filter), through toolgate-bash.so as run does
// and through toolgate-bash; and toolgate-bash with the namespaced part
// too, as an installed session enters it per command. Medians; the
// difference to the floor is what a command pays.
func BenchmarkBashBoundary(b *testing.B) {
	project := b.TempDir()
	os.MkdirAll(filepath.Join(project, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(project, ".git", "config"), nil, 0o644)
	perCommand, _ := Boundary{Writable: append([]string{project, b.TempDir()}, Devices...)}.Encode()
	variants := []struct {
		name     string
		shell    Shell
		boundary string
	}{
		{"bash", Shell{}, ""},
		{"preload", shells[PreloadName], perCommand},
		{"boundary", shells[ShellName], perCommand},
		{"namespaced", shells[ShellName], InstalledBoundary},
	}
	times := map[string][]float64{}
	for b.Loop() {
		for _, v := range variants {
			c := exec.Command(DefaultShell, "-c", "true")
			if v.shell.Path != "" {
				c = exec.Command(v.shell.Path, "-c", "true")
				c.Env = v.shell.Env(os.Environ(), v.boundary)
			}
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
	for _, v := range variants[1:] {
		m := med(times[v.name])
		b.ReportMetric(m, v.name+"_ms")
		b.ReportMetric(m-floor, v.name+"_added_ms")
	}
}

// A session's shell is bash with the preload only when toolgate-bash,
// which makes the session's namespace, is there too; without either, the
// probe says toolgate-bash is missing, and no boundary is claimed.
func TestSessionShellNeedsBothHalves(t *testing.T) {
	for _, c := range []struct {
		files   []string
		preload bool
	}{
		{[]string{ShellName, PreloadName}, true},
		{[]string{PreloadName}, false},
		{[]string{ShellName}, false},
	} {
		bin := t.TempDir()
		for _, f := range c.files {
			from := shells[ShellName].Path
			if f == PreloadName {
				from = shells[PreloadName].Preload
			}
			data, _ := os.ReadFile(from)
			os.WriteFile(filepath.Join(bin, f), data, 0o755)
		}
		sh, err := SessionShell(filepath.Join(bin, "toolgate-hook"), t.TempDir())
		if err != nil || (sh.Preload != "") != c.preload {
			t.Errorf("with %v: %+v, %v; want the preload %v", c.files, sh, err, c.preload)
		}
		err = Probe(sh, Boundary{Writable: []string{bin}})
		if missing := !slices.Contains(c.files, ShellName); missing != errors.Is(err, ErrNoShell) {
			t.Errorf("with %v: Probe: %v", c.files, err)
		}
	}
}
