package tracetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseLine(t *testing.T) {
	tr := &Trace{}
	for _, l := range []string{
		`20848 execve("/usr/bin/ls", ["ls", "-a", "x \"y\"\n\303\251"], 0x563e13dcf650 /* 5 vars */ <unfinished ...>`,
		`20848 <... execve resumed>)             = 0`,
		`20847 openat(AT_FDCWD, "/dev/null", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3`,
		`20847 openat(AT_FDCWD, "a.txt", O_RDONLY) = 3`,
		`20847 openat2(AT_FDCWD, "b", {flags=O_RDWR, mode=0}, 24) = -1 EACCES (Permission denied)`,
		`20849 unlinkat(AT_FDCWD, "gone", 0) = -1 EACCES (Permission denied)`,
		`20849 chdir("/") = 0`,
	} {
		tr.line(l)
	}
	if len(tr.Execs) != 1 || tr.Execs[0].Path != "/usr/bin/ls" || len(tr.Execs[0].Argv) != 3 || tr.Execs[0].Argv[2] != "x \"y\"\né" {
		t.Errorf("execs: %q", tr.Execs)
	}
	if len(tr.Changes) != 3 || tr.Changes[0].Path != "/dev/null" || tr.Changes[1].Path != "b" || tr.Changes[2].Path != "gone" {
		t.Errorf("changes: %+v", tr.Changes)
	}
	if !tr.Chdir {
		t.Error("chdir not seen")
	}
	// A program's own chdir (git's to the top of its repository) moves
	// nothing bash runs; bash's, or a failed exec's process's, does.
	tr = &Trace{}
	for _, l := range []string{
		`300 execve("/usr/bin/bash", ["bash", "-c", "git diff; sub/tool"], 0x1 /* 5 vars */) = 0`,
		`301 execve("/usr/bin/git", ["git", "diff"], 0x1 /* 5 vars */) = 0`,
		`301 chdir("/tmp/repo") = 0`,
		`302 execve("/usr/bin/nothing", ["nothing"], 0x1 /* 5 vars */) = -1 ENOENT (No such file or directory)`,
	} {
		tr.line(l)
	}
	if tr.Chdir {
		t.Error("git's chdir counted as the script's")
	}
	tr.line(`302 chdir("/") = 0`)
	if !tr.Chdir {
		t.Error("the chdir of a process whose exec failed (still bash) not seen")
	}
}

// A real run: what bash executes, writes and connects to is reported, a
// write or connect that fails included, and a script that does not end is
// killed.
func TestBash(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	tr, err := Bash(dir, "ls -a | cat; echo x > out.txt; : <>/dev/tcp/127.0.0.1/9; cd /", env, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var progs []string
	for _, e := range tr.Execs[1:] {
		progs = append(progs, filepath.Base(e.Path))
	}
	if len(progs) != 2 || !tr.Chdir || len(tr.Changes) != 1 || tr.Changes[0].Path != "out.txt" {
		t.Errorf("execs %q, changes %+v, chdir %v", progs, tr.Changes, tr.Chdir)
	}
	if len(tr.Connects) != 1 || !strings.Contains(tr.Connects[0], "127.0.0.1") {
		t.Errorf("connects %q, want the one to 127.0.0.1", tr.Connects)
	}
	start := time.Now()
	tr, err = Bash(dir, "while :; do :; done", env, 300*time.Millisecond)
	if err != nil || !tr.TimedOut || time.Since(start) > 5*time.Second {
		t.Errorf("a loop: %v, timed out %v after %v", err, tr != nil && tr.TimedOut, time.Since(start))
	}
}
