package daemon

import (
	"bytes"
	"fmt"
	"os"
	"os/user"
	"strconv"

	"github.com/toolgate/toolgate/internal/proc"
)

// actor is who is deciding, from the kernel's peer credentials.
type actor struct {
	Name string // user:<login name>
	PID  int
	Exe  string
}

func actorOf(p peer) actor {
	a := actor{Name: "uid:" + strconv.Itoa(p.UID), PID: p.PID}
	if u, err := user.LookupId(strconv.Itoa(p.UID)); err == nil {
		a.Name = "user:" + u.Username
	}
	a.Exe, _ = proc.Exe(p.PID)
	return a
}

// descendsFrom reports whether pid is one of ancestors or descends from
// one, walking the parent chain to init. A chain that cannot be read is
// treated as descending: the check fails closed.
func descendsFrom(pid int, ancestors map[int]bool) bool {
	for range 4096 {
		if ancestors[pid] {
			return true
		}
		if pid <= 1 {
			return false
		}
		ppid, ok := proc.Parent(pid)
		if !ok {
			return true
		}
		pid = ppid
	}
	return true
}

// strictlyDescendsFrom reports whether pid descends from ancestor; a chain
// that cannot be read does not.
func strictlyDescendsFrom(pid, ancestor int) bool {
	for range 4096 {
		ppid, ok := proc.Parent(pid)
		if !ok || ppid <= 1 {
			return ppid == ancestor && ok
		}
		if ppid == ancestor {
			return true
		}
		pid = ppid
	}
	return false
}

// startedByClaude reports whether a process carries the environment Claude
// Code gives everything it runs (CLAUDECODE=1). A process the model started
// and detached from the session's tree (setsid, a double fork) has left the
// parent chain, but keeps this unless it clears its environment. An
// environment that cannot be read counts as Claude's: the check fails
// closed.
func startedByClaude(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return true
	}
	for _, kv := range bytes.Split(data, []byte{0}) {
		if bytes.Equal(kv, []byte("CLAUDECODE=1")) {
			return true
		}
	}
	return false
}

// noNewPrivs reports whether a process runs with no_new_privs, which every
// process of a contained session carries; one whose status cannot be read
// counts as having it: the check fails closed.
func noNewPrivs(pid int) bool {
	nnp, err := proc.NoNewPrivs(pid)
	return nnp || err != nil
}
