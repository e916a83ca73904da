// Package tracetest runs a script with the real bash under strace and
// reports what a permission gate cares about: every program it tried to
// execute, every file it tried to open for writing or to change, every
// socket it tried to connect, and whether it changed directory. Attempts count, whatever their result.
// Only tests import it; it needs strace (Debian: apt-get install strace).
package tracetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Exec is one execve: the file as passed to the kernel, and argv.
type Exec struct {
	Path string
	Argv []string
}

// Change is one attempt to write or change a file: an open for writing,
// creat, unlink, rename, mkdir ... Bash's own look for its terminal
// (/dev/tty) is left out.
type Change struct {
	Syscall string
	Path    string
	Flags   string // the open flags, when the call has them
}

// Trace is what one run of bash did.
type Trace struct {
	Execs    []Exec // the first is bash itself; none when killed before it started
	Changes  []Change
	Connects []string // the address of every connect but to nscd, as strace prints it
	// Chdir: the script changed directory at least once (bash, or a
	// process that has not run another program: a program's own chdir,
	// git's to the top of its repository, moves nothing bash runs).
	Chdir    bool
	TimedOut bool              // killed after the timeout; the trace holds what ran until then
	programs map[string]string // by pid, the last program each ran
}

// traced are the system calls strace reports.
var traced = []string{"execve", "execveat", "open", "openat", "openat2", "creat", "truncate", "mkdir",
	"mkdirat", "mknod", "mknodat", "unlink", "unlinkat", "rmdir", "rename", "renameat", "renameat2", "link",
	"linkat", "symlink", "symlinkat", "chmod", "fchmodat", "chown", "fchownat", "lchown", "utimensat",
	"chdir", "fchdir", "connect"}

// Bash runs bash --norc --noprofile -c script in dir with env, standard
// input and output on /dev/null, in a session of its own, and kills the
// whole session after timeout. Run as root, it runs bash as nobody, so a
// write the script attempts fails but is still reported.
func Bash(dir, script string, env []string, timeout time.Duration) (*Trace, error) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		return nil, errors.New("strace is needed to trace bash (Debian: apt-get install strace)")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		return nil, errors.New("bash is needed (Debian: apt-get install bash)")
	}
	out, err := os.CreateTemp("", "tracetest-*.strace")
	if err != nil {
		return nil, err
	}
	out.Close()
	defer os.Remove(out.Name())
	args := []string{"-f", "-qq", "--seccomp-bpf", "-e", "signal=none", "-s", "65535",
		"-e", "trace=" + strings.Join(traced, ","), "-o", out.Name()}
	if os.Geteuid() == 0 {
		args = append(args, "-u", "nobody")
	}
	args = append(args, "--", bash, "--norc", "--noprofile", "-c", script)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, strace, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	runErr := cmd.Run()
	t, err := parseFile(out.Name())
	if err != nil {
		return nil, err
	}
	t.TimedOut = ctx.Err() != nil
	if len(t.Execs) == 0 && !t.TimedOut {
		return nil, fmt.Errorf("strace ran nothing (%v): %s", runErr, strings.TrimSpace(stderr.String()))
	}
	return t, nil
}

func parseFile(name string) (*Trace, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t := &Trace{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		t.line(sc.Text())
	}
	return t, sc.Err()
}

// line reads one line of strace -f: "PID name(args) = result", or its
// "<unfinished ...>" half; the "resumed" half adds nothing we need.
func (t *Trace) line(l string) {
	pid, rest, ok := strings.Cut(l, " ")
	if !ok {
		return
	}
	rest = strings.TrimLeft(rest, " ")
	name, args, ok := strings.Cut(rest, "(")
	if !ok || strings.HasPrefix(name, "<...") {
		return
	}
	p := &argParser{s: args}
	switch name {
	case "execve":
		t.Execs = append(t.Execs, Exec{Path: p.str(), Argv: p.list()})
		t.ran(pid, t.Execs[len(t.Execs)-1].Path, l)
	case "execveat":
		p.skip()
		t.Execs = append(t.Execs, Exec{Path: p.str(), Argv: p.list()})
		t.ran(pid, t.Execs[len(t.Execs)-1].Path, l)
	case "chdir", "fchdir":
		if prog, ok := t.programs[pid]; !ok || prog == "bash" {
			t.Chdir = true
		}
	case "connect":
		p.skip()
		addr := strings.TrimPrefix(p.rest(), ", ")
		if !strings.Contains(addr, `"/var/run/nscd/socket"`) { // the C library's name lookups
			t.Connects = append(t.Connects, addr)
		}
	case "open", "creat", "openat", "openat2":
		t.open(name, p)
	case "unlinkat", "mkdirat", "mknodat", "fchmodat", "fchownat", "utimensat", "renameat", "renameat2", "linkat":
		p.skip()
		t.Changes = append(t.Changes, Change{Syscall: name, Path: p.str()})
	case "symlinkat":
		p.str()
		p.skip()
		t.Changes = append(t.Changes, Change{Syscall: name, Path: p.str()})
	default:
		t.Changes = append(t.Changes, Change{Syscall: name, Path: p.str()})
	}
}

// ran notes the program a process runs now, when the line shows its
// execve succeeded (one strace splits in two is not noted: the process
// then counts as bash, which only makes Chdir count more).
func (t *Trace) ran(pid, path, line string) {
	if !strings.HasSuffix(line, "= 0") {
		return
	}
	if t.programs == nil {
		t.programs = map[string]string{}
	}
	t.programs[pid] = filepath.Base(path)
}

// open records an open that may write: any of the flags below.
func (t *Trace) open(name string, p *argParser) {
	if name == "openat" || name == "openat2" {
		p.skip()
	}
	path := p.str()
	flags := p.rest()
	if path == "/dev/tty" {
		return // bash looks for its terminal: not a file it writes
	}
	if name == "creat" || writes(flags) {
		t.Changes = append(t.Changes, Change{Syscall: name, Path: path, Flags: flags})
	}
}

func writes(flags string) bool {
	for _, f := range []string{"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"} {
		if strings.Contains(flags, f) {
			return true
		}
	}
	return false
}

// Under resolves a program path as the kernel did, for a process that
// never changed directory from dir.
func Under(dir, path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(dir, path)
}
