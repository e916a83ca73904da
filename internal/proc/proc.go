// Package proc reads what toolgate needs to know of other processes from
// the kernel (/proc, signal 0, sock_diag): their parents, whether they
// live, and which of them holds a socket. It is Linux's; the daemon and
// the supervisor share it.
package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Parent reads a process's parent from /proc/<pid>/stat.
func Parent(pid int) (int, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name in parentheses may hold spaces: parse after it.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	return ppid, err == nil
}

// Alive reports whether a process with pid exists and has not exited: a
// zombie (dead, waiting for its parent to reap it, which an orphan's new
// parent may take its time to do) is not alive.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := unix.Kill(pid, 0); err != nil && !errors.Is(err, unix.EPERM) {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// hold anything.
	i := strings.LastIndexByte(string(data), ')')
	return i < 0 || i+2 >= len(data) || data[i+2] != 'Z' && data[i+2] != 'X'
}

// NoNewPrivs reports whether a process runs with no_new_privs (the
// NoNewPrivs line of /proc/PID/status). Landlock requires it, every
// process started under it inherits it, and none can clear it.
func NoNewPrivs(pid int) (bool, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "NoNewPrivs:"); ok {
			return strings.TrimSpace(v) != "0", nil
		}
	}
	return false, fmt.Errorf("/proc/%d/status has no NoNewPrivs line", pid)
}

// Exe is the executable a process runs, as the kernel names it.
func Exe(pid int) (string, error) { return os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)) }
