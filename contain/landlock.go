//go:build linux

package contain

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// Modes of toolgate run --containment.
const (
	Auto     = "auto"     // the boundary where the kernel allows it, else what it allows, said loudly
	Strict   = "strict"   // the boundary with no network for Bash, or refuse to start claude
	Landlock = "landlock" // the Landlock domain alone, Bash commands unbounded: what auto gives without user namespaces
	Off      = "off"      // none, on purpose
)

// landlockScopedABI is the first Landlock ABI that scopes signals and
// abstract Unix sockets.
const landlockScopedABI = 6

// LandlockABI is the Landlock ABI the kernel offers, or 0 without
// Landlock.
func LandlockABI() int {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(abi)
}

// Level is the containment a session gets, and why.
type Level struct {
	Name   string `json:"level"`            // LevelNone, LevelLandlock, LevelBoundary, LevelStrict or LevelSandbox
	Detail string `json:"detail,omitempty"` // what it gives, or why there is none
	// Boundary is what each Bash command runs in (LevelBoundary and
	// LevelStrict).
	Boundary *Boundary `json:"-"`
}

// Levels of containment.
const (
	LevelNone     = "none"
	LevelLandlock = "landlock" // toolgate run: claude in a Landlock domain, Bash commands unbounded
	LevelBoundary = "boundary" // toolgate run: the domain, and every Bash command in the boundary
	LevelStrict   = "strict"   // LevelBoundary with no network for Bash
	LevelSandbox  = "sandbox"  // installed sessions: Claude Code's Bash sandbox
)

// Contained reports whether the session's claude runs in a Landlock
// domain (and its processes with no_new_privs).
func (l Level) Contained() bool {
	return l.Name == LevelLandlock || l.Name == LevelBoundary || l.Name == LevelStrict
}

// Bounded reports whether every Bash command runs in the boundary.
func (l Level) Bounded() bool { return l.Boundary != nil }

// Sandboxed reports whether Claude Code runs the session's Bash commands
// in its sandbox.
func (l Level) Sandboxed() bool { return l.Name == LevelSandbox }

// Unprotected is what a session without the boundary leaves open, for the
// warning run prints.
const Unprotected = "the model's commands can write every file you can (shell rc files, git config and hooks, Claude Code's settings and MCP servers), " +
	"reach toolgate's sockets, the desktop bus and tmux"

// ForRun decides the containment of a toolgate run session from the asked
// mode and what this machine offers: shell is how the session's commands
// would enter b, their boundary, which is tried once here. An error means
// the mode asks for what this machine cannot give.
func ForRun(mode string, shell Shell, b Boundary) (Level, error) {
	abi := LandlockABI()
	noLandlock := fmt.Sprintf("this kernel offers Landlock ABI %d; scoping signals needs ABI %d (Linux 6.12)", abi, landlockScopedABI)
	domain := fmt.Sprintf("Landlock ABI %d: signals and abstract sockets scoped to the session, no_new_privs", abi)
	switch mode {
	case Off:
		return Level{LevelNone, "switched off (--containment off): " + Unprotected + ", and signal the gate", nil}, nil
	case Auto, "", Strict, Landlock:
	default:
		return Level{}, fmt.Errorf("--containment must be auto, strict, landlock or off, not %q", mode)
	}
	if abi < landlockScopedABI {
		if mode == Strict || mode == Landlock {
			return Level{}, fmt.Errorf("--containment %s: %s", mode, noLandlock)
		}
		return Level{LevelNone, noLandlock + ": " + Unprotected + ", and signal the gate", nil}, nil
	}
	if mode == Landlock {
		return Level{LevelLandlock, domain + "; no Bash boundary (--containment landlock): " + Unprotected, nil}, nil
	}
	b.NoNetwork = b.NoNetwork || mode == Strict
	if err := Probe(shell, b); err != nil {
		if mode == Strict {
			return Level{}, fmt.Errorf("--containment strict: the Bash boundary cannot be applied here: %w", err)
		}
		return Level{LevelLandlock, domain + "; no Bash boundary (" + err.Error() + "): " + Unprotected, nil}, nil
	}
	name, network := LevelBoundary, "network on"
	if b.NoNetwork {
		network = "no network"
	}
	if mode == Strict {
		name = LevelStrict
	}
	var trees []string
	for _, w := range b.Writable {
		if !slices.Contains(Devices, w) {
			trees = append(trees, w)
		}
	}
	detail := fmt.Sprintf("%s; each Bash command writes only in %s (and the usual devices), cannot change git's config and hooks, .claude or .mcp.json, has no Unix sockets, %s",
		domain, strings.Join(trees, ", "), network)
	return Level{name, detail, &b}, nil
}

// Command is the toolgate-hook mode that toolgate run starts claude through
// when it contains it ("toolgate-hook contain --parent PID -- claude ..."):
// it enters the domain, then becomes claude.
const Command = "contain"

// Ready is what Contain writes on its ready descriptor before it executes
// claude, and ExecFailed what it adds when that exec fails: the descriptor
// is still open then, and closes only as Contain exits, which the parent
// must not take for claude's start.
const (
	Ready      = "ok"
	ExecFailed = ", but the exec failed"
)

// Contain enters a Landlock domain that scopes signals and abstract Unix
// sockets, then executes argv (claude) in it, in this process: it returns
// only on failure. The parent's death kills it (toolgate run sets that
// before it starts this process, and it holds across exec); if the parent
// is gone already, it does not start claude. ready, when not nil, is told
// "ok" just before the exec and closed by it: the parent learns that what
// it started is Contain, and that it got as far as claude. When the exec
// fails, ready is told ExecFailed as well.
func Contain(argv, env []string, parent int, ready *os.File) error {
	if len(argv) == 0 {
		return errors.New("contain: no command")
	}
	if err := landlock.V6.RestrictScoped(); err != nil {
		return fmt.Errorf("contain: enter the Landlock domain: %w", err)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	// The parent-death signal belongs to a thread, and the one that
	// executes claude may not be the one toolgate run set it on: set it
	// here, on the thread that calls exec, then make sure run still lives.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("contain: %w", err)
	}
	if os.Getppid() != parent {
		return errors.New("contain: toolgate run is gone")
	}
	if ready != nil {
		// toolgate-bash --enter, on the way to claude, closes it at its
		// own exec of claude, or says why it could not.
		if !(filepath.Base(argv[0]) == ShellName && len(argv) > 1 && argv[1] == EnterFlag) {
			syscall.CloseOnExec(int(ready.Fd()))
		}
		if _, err := ready.WriteString(Ready); err != nil {
			return fmt.Errorf("contain: tell toolgate run: %w", err)
		}
	}
	err = syscall.Exec(path, argv, env)
	if ready != nil {
		ready.WriteString(ExecFailed)
	}
	return fmt.Errorf("contain: execute %s: %w", path, err)
}
