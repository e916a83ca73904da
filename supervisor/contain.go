package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// Containment is how toolgate run bounds what the session's processes can
// do to the gate itself. Everything the model runs executes as the user,
// so without a boundary it could signal the daemon, toolgate run or an
// approver.
//
// With ContainLandlock, claude starts inside a Landlock domain that scopes
// signals and abstract Unix sockets (ABI 6): claude and everything it
// starts, detached or not (a domain is inherited and cannot be left), can
// signal only processes inside the domain, and carries no_new_privs, which
// the daemon reads to refuse a contained process as an approver and which
// keeps setuid and setgid programs (crontab, at) from gaining privileges.
// The gate (daemon, toolgate run, hooks' daemon, approvers) stays outside.
const (
	ContainAuto     = "auto"     // Landlock where the kernel has it, else none, said loudly
	ContainLandlock = "landlock" // Landlock, or refuse to start claude
	ContainOff      = "off"      // none, on purpose
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
	Name   string `json:"level"`            // "landlock" or "none"
	Detail string `json:"detail,omitempty"` // what it gives, or why there is none
}

// Contained reports whether the session's processes run in a domain.
func (l Level) Contained() bool { return l.Name == ContainLandlock }

// ContainmentLevel decides the containment of a session from the asked
// mode and what the kernel offers; an error means the mode asks for what
// this machine cannot give.
func ContainmentLevel(mode string) (Level, error) {
	abi := LandlockABI()
	switch {
	case mode == ContainOff:
		return Level{"none", "switched off (--containment off): the model's processes can signal and replace the gate"}, nil
	case abi >= landlockScopedABI:
		return Level{ContainLandlock, fmt.Sprintf("Landlock ABI %d: signals and abstract sockets scoped to the session, no_new_privs", abi)}, nil
	case mode == ContainLandlock:
		return Level{}, fmt.Errorf("--containment landlock: this kernel offers Landlock ABI %d; scoping signals needs ABI %d (Linux 6.12)", abi, landlockScopedABI)
	case mode == ContainAuto:
		return Level{"none", fmt.Sprintf("this kernel offers Landlock ABI %d, not %d (Linux 6.12): the model's processes can signal and replace the gate", abi, landlockScopedABI)}, nil
	}
	return Level{}, fmt.Errorf("--containment must be auto, landlock or off, not %q", mode)
}

// ContainCommand is the hidden toolgate command that toolgate run starts
// claude through when it contains it: it enters the domain, then becomes
// claude.
const ContainCommand = "contain"

// Contain enters a Landlock domain that scopes signals and abstract Unix
// sockets, then executes argv (claude) in it, in this process: it returns
// only on failure. The parent's death kills it (toolgate run sets that
// before it starts this process, and it holds across exec); if the parent
// is gone already, it does not start claude.
func Contain(argv, env []string, parent int) error {
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
	return syscall.Exec(path, argv, env)
}

// containedCommand is claude's command line as toolgate run starts it:
// through toolgate contain when the session is contained.
func containedCommand(level Level, self, claude string, args []string) (string, []string) {
	if !level.Contained() {
		return claude, args
	}
	return self, append([]string{ContainCommand, "--parent", fmt.Sprint(os.Getpid()), "--", claude}, args...)
}
