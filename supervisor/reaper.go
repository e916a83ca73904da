package supervisor

import (
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/internal/proc"
	"golang.org/x/sys/unix"
)

// becomeSubreaper makes the orphans of claude's tree (a process the model
// detached with setsid, nohup or a double fork) children of this process
// instead of init: they stay in the session's parent chain, so the daemon
// still refuses them as approvers, and they can be ended with the session.
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// children lists this process's children, except those in keep.
func children(keep map[int]bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || keep[pid] {
			continue
		}
		if ppid, ok := proc.Parent(pid); ok && ppid == self {
			out = append(out, pid)
		}
	}
	return out
}

// endOrphans ends the processes the session left behind (adopted as a
// subreaper), keeping the daemon: SIGTERM, a bounded wait, SIGKILL, and
// reaps them.
func endOrphans(keep map[int]bool, grace time.Duration) {
	pids := children(keep)
	for _, pid := range pids {
		unix.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for len(pids) > 0 && time.Now().Before(deadline) {
		reap()
		pids = children(keep)
		time.Sleep(20 * time.Millisecond)
	}
	for _, pid := range pids {
		unix.Kill(pid, syscall.SIGKILL)
	}
	time.Sleep(20 * time.Millisecond)
	reap()
}

// reap collects every child that has exited.
func reap() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
