package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/toolgate/toolgate/paths"
)

// Trust is what a client of gate.sock requires of the process that
// answers there before it believes a verdict (Client.VerifyPeer): the
// hook and toolgate run must not take a verdict from whatever listens on
// the socket, because a process of the user's (one the model started, say)
// can replace the socket file.
type Trust struct {
	// Exe is the daemon's executable, the toolgate binary.
	Exe string
	// Contained says that the client runs inside a session's Landlock
	// domain (toolgate run's containment). Then the daemon must be
	// outside it: a process inside, as everything the model starts is,
	// cannot be the gate.
	Contained bool
	// AnyToolgate accepts a daemon run from another toolgate binary than
	// Exe (one named toolgate: a person's CLI may be another install than
	// the daemon's), without no_new_privs: what a person's commands
	// (pending, show, approve, watch, notify, audit) require, so that
	// nothing the model starts can stand in for approve.sock and show a
	// person another call than the one they decide.
	AnyToolgate bool
}

// Verify refuses a peer that is not the daemon Trust describes.
//
// Outside containment it checks the peer's executable. Inside, the kernel
// keeps a contained process from reading that of a process outside its
// domain (Landlock treats it as ptrace), so it checks what it can see:
// that the peer is outside the domain (nothing the model started is), runs
// without no_new_privs (nothing contained does) and is named toolgate.
// toolgate run, outside, watches that the daemon on the socket stays the
// one it trusts, by pid and executable.
func (t Trust) Verify(p Peer) error {
	if p.UID != os.Getuid() {
		return fmt.Errorf("the process on the gate's socket (pid %d) belongs to uid %d, not to you", p.PID, p.UID)
	}
	if t.Contained {
		return t.verifyFromInside(p)
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.PID))
	if err != nil {
		return fmt.Errorf("the process on the gate's socket (pid %d) cannot be identified: %w", p.PID, err)
	}
	if t.AnyToolgate && filepath.Base(strings.TrimSuffix(exe, " (deleted)")) == "toolgate" {
		return noNewPrivsOff(p.PID)
	}
	if !sameFile(exe, t.Exe) {
		return fmt.Errorf("the process on the gate's socket (pid %d) is %s, not the toolgate daemon (%s)", p.PID, exe, t.Exe)
	}
	if t.AnyToolgate {
		return noNewPrivsOff(p.PID)
	}
	return nil
}

// noNewPrivsOff refuses a daemon with no_new_privs: everything a contained
// session starts carries it, and the gate never does.
func noNewPrivsOff(pid int) error {
	status, err := paths.ReadRegular(fmt.Sprintf("/proc/%d/status", pid), 1<<20)
	if err != nil {
		return fmt.Errorf("the process on the gate's socket (pid %d) cannot be identified: %w", pid, err)
	}
	if _, nnp := statusFields(string(status)); nnp != "0" {
		return fmt.Errorf("the process on the gate's socket (pid %d) runs with no_new_privs, as what a contained session starts does: it is not the gate", pid)
	}
	return nil
}

func (t Trust) verifyFromInside(p Peer) error {
	if insideDomain(p.PID) {
		return fmt.Errorf("the process on the gate's socket (pid %d) runs inside this session's containment: it cannot be the gate", p.PID)
	}
	status, err := paths.ReadRegular(fmt.Sprintf("/proc/%d/status", p.PID), 1<<20) // not waiting on a lease: see ReadRegular
	if err != nil {
		return fmt.Errorf("the process on the gate's socket (pid %d) cannot be identified: %w", p.PID, err)
	}
	if name, nnp := statusFields(string(status)); nnp != "0" || name != filepath.Base(t.Exe) {
		return fmt.Errorf("the process on the gate's socket (pid %d) is %q with no_new_privs %s, not the toolgate daemon", p.PID, name, nnp)
	}
	return nil
}

// statusFields reads the Name and NoNewPrivs lines of /proc/PID/status.
func statusFields(status string) (name, nnp string) {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "Name:"); ok {
			name = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "NoNewPrivs:"); ok {
			nnp = strings.TrimSpace(v)
		}
	}
	return name, nnp
}

// insideDomain reports whether pid is in the caller's Landlock domain (or
// one nested in it): from inside a domain that scopes signals, signal 0
// reaches a process of the same user only there.
func insideDomain(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.EPERM)
}

// sameFile reports whether the executable exe (as /proc/PID/exe names it:
// resolved, and " (deleted)" when the file was replaced since, as an
// upgrade does) is the file at path, symbolic links resolved.
func sameFile(exe, path string) bool {
	if path == "" {
		return false
	}
	want, err := filepath.EvalSymlinks(path)
	return err == nil && strings.TrimSuffix(exe, " (deleted)") == want
}
