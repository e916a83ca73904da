package supervisor

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolgate/toolgate/supervisor/api"
)

// Paths are where the daemon keeps its socket, locks, log and ledger.
type Paths struct {
	RuntimeDir string // sockets and locks: $XDG_RUNTIME_DIR/toolgate
	StateDir   string // the ledger and the daemon's log: $XDG_STATE_HOME/toolgate
	Ledger     string // the ledger's directory when not StateDir/ledger
}

// Socket is the gate's socket.
func (p Paths) Socket() string { return filepath.Join(p.RuntimeDir, api.SocketName) }

// ApproveSocket is the approvers' socket.
func (p Paths) ApproveSocket() string { return filepath.Join(p.RuntimeDir, "approve.sock") }

// daemonLock is held by the running daemon for as long as it lives.
func (p Paths) daemonLock() string { return filepath.Join(p.RuntimeDir, "gate.lock") }

// startLock serializes the processes that may start a daemon.
func (p Paths) startLock() string { return filepath.Join(p.RuntimeDir, "start.lock") }

// LedgerDir is the ledger's directory.
func (p Paths) LedgerDir() string {
	if p.Ledger != "" {
		return p.Ledger
	}
	return filepath.Join(p.StateDir, "ledger")
}

// LogFile is where a daemon started on demand writes its log.
func (p Paths) LogFile() string { return filepath.Join(p.StateDir, "daemon.log") }

// SpoolFile is where the hook records, for one session, the calls it had
// to deny without reaching the daemon.
func (p Paths) SpoolFile(sessionID string) string {
	return filepath.Join(p.RuntimeDir, "spool", sessionID+".jsonl")
}

// makeRuntimeDir creates the runtime directory 0700 and checks that it is
// ours: a socket in a directory another user controls is not safe.
func (p Paths) makeRuntimeDir() error {
	if err := os.MkdirAll(filepath.Join(p.RuntimeDir, "spool"), 0o700); err != nil {
		return fmt.Errorf("runtime directory: %w", err)
	}
	info, err := os.Lstat(p.RuntimeDir)
	if err != nil {
		return fmt.Errorf("runtime directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("runtime directory %s is not a directory", p.RuntimeDir)
	}
	if uid, ok := ownerUID(info); ok && uid != os.Getuid() {
		return fmt.Errorf("runtime directory %s belongs to uid %d, not to you", p.RuntimeDir, uid)
	}
	if info.Mode().Perm() != 0o700 {
		if err := os.Chmod(p.RuntimeDir, 0o700); err != nil {
			return fmt.Errorf("runtime directory: %w", err)
		}
	}
	if len(p.Socket()) >= 108 {
		return fmt.Errorf("socket path %s is longer than the 107 bytes Unix sockets allow; set XDG_RUNTIME_DIR to a shorter directory", p.Socket())
	}
	return nil
}
