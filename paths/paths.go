package paths

import (
	"os"
	"path/filepath"
	"strconv"
)

// From derives every path toolgate uses from the environment (getenv
// is how the caller reads it). It is the one place that does: the CLI, the
// daemon and the hook binary all call it, so that they always meet.
//
//	RuntimeDir  TOOLGATE_RUNTIME_DIR, or $XDG_RUNTIME_DIR/toolgate, or
//	            /run/user/UID/toolgate when the user's runtime directory
//	            exists (cron gives no XDG_RUNTIME_DIR, systemd still made it),
//	            or $TMPDIR/toolgate-UID
//	StateDir    TOOLGATE_STATE_DIR, or $XDG_STATE_HOME/toolgate, or
//	            ~/.local/state/toolgate
//	Ledger      TOOLGATE_LEDGER, or StateDir/ledger
//
// Clients then call Live, which finds the daemon that serves the ledger
// whatever runtime directory it was started with.
func From(getenv func(string) string) Paths {
	p := Paths{StateDir: xdgDir(getenv, "TOOLGATE_STATE_DIR", "XDG_STATE_HOME", ".local/state"), Ledger: getenv("TOOLGATE_LEDGER")}
	switch {
	case filepath.IsAbs(getenv("TOOLGATE_RUNTIME_DIR")):
		p.RuntimeDir, p.Pinned = getenv("TOOLGATE_RUNTIME_DIR"), true
	case filepath.IsAbs(getenv("XDG_RUNTIME_DIR")):
		p.RuntimeDir = filepath.Join(getenv("XDG_RUNTIME_DIR"), "toolgate")
	default:
		p.RuntimeDir = filepath.Join(os.TempDir(), "toolgate-"+strconv.Itoa(os.Getuid()))
		if user := UserRuntimeDir(); ownDir(user) == nil {
			p.RuntimeDir = filepath.Join(user, "toolgate")
		}
	}
	return p
}

// UserRuntimeDir is where systemd keeps the user's runtime directory,
// whether or not XDG_RUNTIME_DIR says so.
func UserRuntimeDir() string { return "/run/user/" + strconv.Itoa(os.Getuid()) }

// ConfigDir is toolgate's configuration directory: $XDG_CONFIG_HOME/toolgate,
// or ~/.config/toolgate. The default policy lives there.
func ConfigDir(getenv func(string) string) string {
	return xdgDir(getenv, "", "XDG_CONFIG_HOME", ".config")
}

// xdgDir is $override, or $xdg/toolgate, or ~/fallback/toolgate when they
// are unset or not absolute (as the XDG specification asks).
func xdgDir(getenv func(string) string, override, xdg, fallback string) string {
	if dir := getenv(override); override != "" && filepath.IsAbs(dir) {
		return dir
	}
	if dir := getenv(xdg); filepath.IsAbs(dir) {
		return filepath.Join(dir, "toolgate")
	}
	home := getenv("HOME")
	if !filepath.IsAbs(home) {
		home = os.TempDir()
	}
	return filepath.Join(home, fallback, "toolgate")
}

// SocketName is the gate socket's name in the runtime directory.
const SocketName = "gate.sock"

// Paths are where the daemon keeps its sockets, locks, log and ledger.
type Paths struct {
	RuntimeDir string // sockets and locks: $XDG_RUNTIME_DIR/toolgate
	StateDir   string // the ledger and the daemon's log: $XDG_STATE_HOME/toolgate
	Ledger     string // the ledger's directory when not StateDir/ledger
	// Pinned says that RuntimeDir was named outright (TOOLGATE_RUNTIME_DIR):
	// Live leaves it alone.
	Pinned bool
}

// Socket is the gate's socket: the hook, the prompt tool and toolgate run.
func (p Paths) Socket() string { return filepath.Join(p.RuntimeDir, SocketName) }

// ApproveSocket is the approvers' socket.
func (p Paths) ApproveSocket() string { return filepath.Join(p.RuntimeDir, "approve.sock") }

// DaemonLock is held by the running daemon for as long as it lives.
func (p Paths) DaemonLock() string { return filepath.Join(p.RuntimeDir, "gate.lock") }

// StartLock serializes the processes that may start a daemon on the
// ledger. It lives beside the ledger, not among the sockets: two starters
// whose environments name different runtime directories must still take
// turns, or both would start a daemon and one would find the ledger held.
func (p Paths) StartLock() string { return filepath.Join(p.StateDir, "start.lock") }

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
