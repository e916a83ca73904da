package hook

import (
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

// A hook of a contained session (toolgate run) checks the daemon on the
// socket from inside the session's Landlock domain by reading
// /proc/PID/status. That file is the user's, and any process of theirs,
// the model's included (Landlock scopes signals and abstract sockets, not
// /proc), may take a write lease on it (F_SETLEASE): a blocking open then
// waits for the lease to break, up to the kernel's lease-break-time (45 s
// by default), past Claude Code's 30 s timeout of the hook, which lets an
// auto-allowed call run. The hook must answer (deny gate_unavailable)
// within its own deadline whatever the file does.
func TestContainedHookAnswersDespiteALeaseOnTheDaemonsStatus(t *testing.T) {
	if os.Getenv("TOOLGATE_REVIEW_LEASE_CHILD") == "1" {
		t.Skip("the child's part runs in TestContainedHookLeaseChild")
	}
	if abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION); errno != 0 || abi < 6 {
		missing(t, "no Landlock ABI 6: the hook's check from inside a domain cannot be reached")
	}
	dir, err := os.MkdirTemp("", "tgl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
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

	// The daemon on the socket is this process: a write lease on its status.
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/status", os.Getpid()), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		missing(t, fmt.Sprintf("no lease on /proc/%d/status: %v", os.Getpid(), err))
	}
	release := func() { unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK) }
	defer release()

	out := filepath.Join(dir, "answer")
	child := exec.Command(os.Args[0], "-test.run=^TestContainedHookLeaseChild$", "-test.count=1")
	exe, _ := os.Executable()
	child.Env = append(os.Environ(), "TOOLGATE_REVIEW_LEASE_CHILD=1", "TOOLGATE_SOCKET="+sock, "TOOLGATE_SESSION=s1",
		"TOOLGATE_CONTAINED=1", "TOOLGATE_DAEMON_EXE="+exe, "REVIEW_ANSWER="+out, "TOOLGATE_SPOOL="+filepath.Join(dir, "spool"))
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

// TestContainedHookLeaseChild is the hook of the test above, run in a
// process of its own inside a Landlock domain that scopes signals, as a
// contained session's hook is.
func TestContainedHookLeaseChild(t *testing.T) {
	if os.Getenv("TOOLGATE_REVIEW_LEASE_CHILD") != "1" {
		t.Skip("run by TestContainedHookAnswersDespiteALeaseOnTheDaemonsStatus")
	}
	if err := landlock.V6.RestrictScoped(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(os.Getenv("REVIEW_ANSWER"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	Main(Process{Stdin: strings.NewReader(preToolUse), Stdout: f, Stderr: os.Stderr, Getenv: os.Getenv,
		DaemonExe: os.Getenv("TOOLGATE_DAEMON_EXE")})
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
