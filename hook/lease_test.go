package hook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// A write lease (F_SETLEASE), which any process of the user's may take on
// a file the user owns, the model's included, makes a blocking open of that
// file wait until the lease breaks: up to the kernel's lease-break-time,
// 45 s by default, past Claude Code's 30 s timeout of the hook, which then
// lets an auto-allowed call run. Whatever a contained hook opens on a
// call's way, it answers (deny gate_unavailable) within its own deadline.
//
// Two files are on that way. The daemon's /proc/PID/status, which a
// contained hook reads to check the daemon from inside the session's
// Landlock domain: some kernels refuse a lease on a procfs file (EINVAL),
// and there this attack cannot be mounted. The session's spool file, where
// a hook that finds no daemon records the call: a regular file, which every
// kernel lets the user lease.
func TestContainedHookAnswersDespiteALease(t *testing.T) {
	if os.Getenv(leaseChildEnv) != "" {
		t.Skip("the child's part runs in TestContainedHookLeaseChild")
	}
	if abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION); errno != 0 || abi < 6 {
		missing(t, "no Landlock ABI 6: the hook's check from inside a domain cannot be reached")
	}
	t.Run("on the daemon's status", func(t *testing.T) {
		dir := shortTempDir(t)
		sock := filepath.Join(dir, "gate.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"verdict":{"effect":"allow","source":"policy"}}`)) // never reached: the peer is refused or the hook waits
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		// The daemon on the socket is this process.
		status := fmt.Sprintf("/proc/%d/status", os.Getpid())
		release, err := writeLease(status)
		if errors.Is(err, unix.EINVAL) {
			t.Logf("this kernel refuses a lease on %s (%v): the attack through the daemon's status cannot be mounted here", status, err)
			return
		}
		if err != nil {
			t.Fatalf("lease on %s: %v", status, err)
		}
		defer release()
		hookUnderLease(t, dir, sock, release)
	})
	t.Run("on the spool file", func(t *testing.T) {
		dir := shortTempDir(t)
		spool := filepath.Join(dir, "spool")
		if err := os.WriteFile(spool, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		release, err := writeLease(spool)
		if err != nil {
			t.Fatalf("lease on a regular file of the user's: %v", err)
		}
		defer release()
		hookUnderLease(t, dir, filepath.Join(dir, "none.sock"), release) // no daemon: the hook spools
	})
}

// writeLease takes a write lease on the file at path; release gives it up.
func writeLease(path string) (release func(), err error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		unix.Close(fd)
		return nil, err
	}
	var done bool
	return func() {
		if !done {
			done = true
			unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
			unix.Close(fd)
		}
	}, nil
}

// hookUnderLease runs the hook in a child process inside a Landlock domain
// (TestContainedHookLeaseChild), asking the daemon on sock with its spool
// in dir, and requires a deny gate_unavailable within the hook's deadline.
func hookUnderLease(t *testing.T, dir, sock string, release func()) {
	t.Helper()
	out := filepath.Join(dir, "answer")
	exe, _ := os.Executable()
	child := exec.Command(os.Args[0], "-test.run=^TestContainedHookLeaseChild$", "-test.count=1")
	child.Env = append(os.Environ(), leaseChildEnv+"="+out, "TOOLGATE_SOCKET="+sock, "TOOLGATE_SESSION=s1",
		"TOOLGATE_CONTAINED=1", "TOOLGATE_DAEMON_EXE="+exe, "TOOLGATE_SPOOL="+filepath.Join(dir, "spool"))
	var childOut strings.Builder
	child.Stdout, child.Stderr = &childOut, &childOut
	start := time.Now()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("child: %v\n%s", err, childOut.String())
		}
	case <-time.After(Timeout + 5*time.Second): // a bound on a hang, not a wait for an event
		release()
		<-done
		t.Fatalf("the contained hook gave no answer within %v (its deadline is %v): it waited on the lease", Timeout+5*time.Second, Timeout)
	}
	answer, _ := os.ReadFile(out)
	t.Logf("the hook answered in %v: %s", time.Since(start).Round(time.Millisecond), answer)
	if !strings.Contains(string(answer), `"permissionDecision":"deny"`) || !strings.Contains(string(answer), "gate_unavailable") {
		t.Errorf("the hook's answer: %q, want a deny gate_unavailable\n%s", answer, childOut.String())
	}
}

// leaseChildEnv names, in the child of hookUnderLease, the file its answer
// goes to.
const leaseChildEnv = "TOOLGATE_TEST_LEASE_ANSWER"

// TestContainedHookLeaseChild is the hook of the test above, run in a
// process of its own inside a Landlock domain that scopes signals, as a
// contained session's hook is.
func TestContainedHookLeaseChild(t *testing.T) {
	if os.Getenv(leaseChildEnv) == "" {
		t.Skip("run by TestContainedHookAnswersDespiteALease")
	}
	if err := landlock.V6.RestrictScoped(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(os.Getenv(leaseChildEnv))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	Main(Process{Stdin: strings.NewReader(preToolUse), Stdout: f, Stderr: os.Stderr, Getenv: os.Getenv,
		DaemonExe: os.Getenv("TOOLGATE_DAEMON_EXE")})
}

// shortTempDir is a new directory whose sockets fit the 108-byte limit.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tgl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// missing skips a test this machine cannot run, and fails it in CI
// (CI=true), whose machines must run it.
func missing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}
