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

// descendants lists the processes descending from this one, except those
// in keep and what descends from them; zombies are left out.
func descendants(keep map[int]bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	kids := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := proc.Parent(pid); ok {
			kids[ppid] = append(kids[ppid], pid)
		}
	}
	var out []int
	queue := []int{os.Getpid()}
	for len(queue) > 0 {
		for _, kid := range kids[queue[0]] {
			if !keep[kid] && proc.Alive(kid) {
				out = append(out, kid)
				queue = append(queue, kid)
			}
		}
		queue = queue[1:]
	}
	return out
}

// killRounds bounds endOrphans' SIGKILL rounds: each kills everything
// left, whose children the subreaper then adopts; a process that forks
// faster than that is still there after them.
const killRounds = 200

// endOrphans ends the processes the session left behind (adopted as a
// subreaper), keeping the daemon: SIGTERM, a bounded wait, then SIGKILL to
// every descendant, round after round until none is left (a process that
// ignores SIGTERM may fork as it dies), and reaps them.
func endOrphans(keep map[int]bool, grace time.Duration) {
	pids := descendants(keep)
	for _, pid := range pids {
		unix.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for len(pids) > 0 && time.Now().Before(deadline) {
		reap()
		pids = descendants(keep)
		time.Sleep(20 * time.Millisecond)
	}
	for round := 0; len(pids) > 0 && round < killRounds; round++ {
		for _, pid := range pids {
			unix.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
		reap()
		pids = descendants(keep)
	}
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
