package api

import (
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// DefaultApprovalTimeout is how long an ask of a toolgate run session waits
// for a person when neither the run nor the rule says otherwise.
const DefaultApprovalTimeout = 15 * time.Minute

// DefaultInstalledApprovalTimeout is how long a PermissionRequest of a
// session gated by toolgate install's hook waits for a person when the
// installed hook does not say otherwise. A rule's approval_timeout may
// shorten it, never lengthen it: Claude Code kills the hook at its own
// timeout, which install derives from this one.
const DefaultInstalledApprovalTimeout = 5 * time.Minute

// RuntimeDir is where the daemon's sockets live: TOOLGATE_RUNTIME_DIR, or
// $XDG_RUNTIME_DIR/toolgate, or a private directory under the system's
// temporary directory when XDG_RUNTIME_DIR is unset. getenv is how the
// caller reads its environment; the CLI and the hook binary both decide
// the path here, so that they always meet.
func RuntimeDir(getenv func(string) string) string {
	if dir := getenv("TOOLGATE_RUNTIME_DIR"); filepath.IsAbs(dir) {
		return dir
	}
	if dir := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "toolgate")
	}
	return filepath.Join(os.TempDir(), "toolgate-"+strconv.Itoa(os.Getuid()))
}

// SocketName is the gate socket's name in the runtime directory.
const SocketName = "gate.sock"

// Paths are where the daemon keeps its sockets, locks, log and ledger.
type Paths struct {
	RuntimeDir string // sockets and locks: $XDG_RUNTIME_DIR/toolgate
	StateDir   string // the ledger and the daemon's log: $XDG_STATE_HOME/toolgate
	Ledger     string // the ledger's directory when not StateDir/ledger
}

// Socket is the gate's socket: the hook, the prompt tool and toolgate run.
func (p Paths) Socket() string { return filepath.Join(p.RuntimeDir, SocketName) }

// ApproveSocket is the approvers' socket.
func (p Paths) ApproveSocket() string { return filepath.Join(p.RuntimeDir, "approve.sock") }

// DaemonLock is held by the running daemon for as long as it lives.
func (p Paths) DaemonLock() string { return filepath.Join(p.RuntimeDir, "gate.lock") }

// StartLock serializes the processes that may start a daemon.
func (p Paths) StartLock() string { return filepath.Join(p.RuntimeDir, "start.lock") }

// LedgerDir is the ledger's directory.
func (p Paths) LedgerDir() string {
	if p.Ledger != "" {
		return p.Ledger
	}
	return filepath.Join(p.StateDir, "ledger")
}

// LogFile is where a daemon started on demand writes its log.
func (p Paths) LogFile() string { return filepath.Join(p.StateDir, "daemon.log") }

// SpoolDir holds the sessions' spool files.
func (p Paths) SpoolDir() string { return filepath.Join(p.RuntimeDir, "spool") }

// SpoolFile is where the hook records, for one session, the calls it had
// to deny without reaching the daemon.
func (p Paths) SpoolFile(sessionID string) string {
	return filepath.Join(p.SpoolDir(), sessionID+".jsonl")
}
