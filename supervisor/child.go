package supervisor

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// child is claude, in its own process group so that the whole tree (its
// MCP servers, the shells of its Bash tool) can be signalled together.
type child struct {
	cmd *exec.Cmd
}

// startChild starts cmd in a new process group with the caller's stdio
// passed through untouched: claude writes straight to our stdout.
func startChild(cmd *exec.Cmd) (*child, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &child{cmd: cmd}, nil
}

// wait waits for the child, forwarding SIGINT, SIGTERM and SIGHUP to its
// process group meanwhile, and returns its exit status (128+signal when a
// signal ended it).
func (c *child) wait() int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
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
