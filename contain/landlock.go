//go:build linux

package contain

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// Modes of toolgate run --containment.
const (
	Auto     = "auto"     // Landlock where the kernel has it, else none, said loudly
	Landlock = "landlock" // Landlock, or refuse to start claude
	Strict   = "strict"   // Landlock and Claude Code's Bash sandbox, or refuse to start claude
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
	Name   string `json:"level"`            // LevelNone, LevelLandlock, LevelStrict or LevelSandbox
	Detail string `json:"detail,omitempty"` // what it gives, or why there is none
}

// Levels of containment.
const (
	LevelNone     = "none"
	LevelLandlock = "landlock"         // toolgate run: a Landlock domain
	LevelStrict   = "landlock+sandbox" // toolgate run: the domain and Claude Code's Bash sandbox
	LevelSandbox  = "sandbox"          // installed sessions: Claude Code's Bash sandbox
)

// Contained reports whether the session's claude runs in a Landlock
// domain (and its processes with no_new_privs).
func (l Level) Contained() bool { return l.Name == LevelLandlock || l.Name == LevelStrict }

// Sandboxed reports whether Claude Code runs the session's Bash commands
// in its sandbox.
func (l Level) Sandboxed() bool { return l.Name == LevelStrict || l.Name == LevelSandbox }

// ForRun decides the containment of a toolgate run session from the asked
// mode and what this machine offers; an error means the mode asks for what
// this machine cannot give.
func ForRun(mode string) (Level, error) {
	abi := LandlockABI()
	landlockOK := abi >= landlockScopedABI
	noLandlock := fmt.Sprintf("this kernel offers Landlock ABI %d; scoping signals needs ABI %d (Linux 6.12)", abi, landlockScopedABI)
	landlockDetail := fmt.Sprintf("Landlock ABI %d: signals and abstract sockets scoped to the session, no_new_privs", abi)
	switch mode {
	case Off:
		return Level{LevelNone, "switched off (--containment off): the model's processes can signal and replace the gate"}, nil
	case Auto, "":
		if !landlockOK {
			return Level{LevelNone, noLandlock + ": the model's processes can signal and replace the gate"}, nil
		}
		return Level{LevelLandlock, landlockDetail}, nil
	case Landlock, Strict:
		if !landlockOK {
			return Level{}, fmt.Errorf("--containment %s: %s", mode, noLandlock)
		}
		if mode == Landlock {
			return Level{LevelLandlock, landlockDetail}, nil
		}
		if missing := SandboxMissing(); len(missing) > 0 {
			return Level{}, fmt.Errorf("--containment strict: Claude Code's sandbox needs %s: apt-get install %s",
				strings.Join(missing, " and "), strings.Join(missing, " "))
		}
		return Level{LevelStrict, landlockDetail + "; Bash runs in Claude Code's sandbox: " + sandboxDetail}, nil
	}
	return Level{}, fmt.Errorf("--containment must be auto, landlock, strict or off, not %q", mode)
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
		syscall.CloseOnExec(int(ready.Fd()))
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
