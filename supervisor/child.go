package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/contain"
	"golang.org/x/sys/unix"
)

// child is claude, in its own process group so that the whole tree (its
// MCP servers, the shells of its Bash tool) can be signalled together.
type child struct {
	cmd  *exec.Cmd
	sigs chan os.Signal
	// interrupted: a signal came to stop the run (set by wait, for its
	// caller to read once it returns).
	interrupted bool
}

// startChild starts cmd in a new process group with the caller's stdio
// passed through untouched: claude writes straight to our stdout. From
// then on, SIGINT, SIGTERM and SIGHUP sent to us go to claude's group.
// It dies with this process (SIGKILL when the thread that started it
// ends, which the caller keeps alive: the run of a killed toolgate run
// must not go on as an orphan).
func startChild(cmd *exec.Cmd) (*child, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c := &child{cmd: cmd, sigs: make(chan os.Signal, 4)}
	signal.Notify(c.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		signal.Stop(c.sigs)
		return nil, err
	}
	return c, nil
}

// wait waits for the child, forwarding signals to its process group
// meanwhile, and returns its exit status (128+signal when a signal ended
// it).
func (c *child) wait() int {
	defer signal.Stop(c.sigs)
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	for {
		select {
		case sig := <-c.sigs:
			c.interrupted = true
			unix.Kill(-c.cmd.Process.Pid, sig.(syscall.Signal))
		case err := <-done:
			return exitStatus(c.cmd.ProcessState, err)
		}
	}
}

func exitStatus(ps *os.ProcessState, err error) int {
	if ps == nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			ps = ee.ProcessState
		} else {
			return 1
		}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// stopGroup ends what is left of the child's process group once claude
// has exited: SIGTERM, a bounded wait, then SIGKILL.
func (c *child) stopGroup(grace time.Duration) {
	pgid := c.cmd.Process.Pid
	if unix.Kill(-pgid, syscall.SIGTERM) != nil {
		return // nothing left
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if unix.Kill(-pgid, 0) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	unix.Kill(-pgid, syscall.SIGKILL)
}

// containedCommand is claude's command line as toolgate run starts it:
// through "toolgate-hook contain" when the session is contained (the hook
// binary starts about ten milliseconds sooner than toolgate), and then,
// with the boundary, through "toolgate-bash --enter", which makes the
// project's protected paths read-only for claude and all it starts.
func containedCommand(level contain.Level, hook, claude string, args []string) (string, []string, error) {
	if !level.Contained() {
		return claude, args, nil
	}
	if level.Bounded() {
		enc, err := level.Boundary.Namespaced().Encode()
		if err != nil {
			return "", nil, err
		}
		if claude, err = exec.LookPath(claude); err != nil {
			return "", nil, err
		}
		if claude, err = filepath.Abs(claude); err != nil {
			return "", nil, err
		}
		args = append([]string{contain.EnterFlag, enc, "--ready", fmt.Sprint(containReadyFD), claude}, args...)
		claude = contain.ShellPath(hook)
	}
	return hook, append([]string{contain.Command, "--parent", fmt.Sprint(os.Getpid()), "--ready", fmt.Sprint(containReadyFD), "--", claude}, args...), nil
}
