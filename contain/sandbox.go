package contain

import (
	"fmt"
	"os/exec"
	"strings"
)

// sandboxDetail is what Claude Code's sandbox gives a Bash command, as
// measured on the pinned CLI (README, "Security model").
const sandboxDetail = "its own PID namespace, no Unix sockets, writes only under the project and never to toolgate's files, network through Claude Code's proxy"

// SandboxMissing lists the Debian packages Claude Code's sandbox needs that
// this machine lacks (bubblewrap for bwrap, and socat), by PATH.
func SandboxMissing() []string {
	var missing []string
	for _, p := range []struct{ bin, pkg string }{{"bwrap", "bubblewrap"}, {"socat", "socat"}} {
		if _, err := exec.LookPath(p.bin); err != nil {
			missing = append(missing, p.pkg)
		}
	}
	return missing
}

// Modes of toolgate install --containment.
const (
	InstallAuto    = "auto"    // the sandbox where bubblewrap and socat are installed, else none, said plainly
	InstallSandbox = "sandbox" // the sandbox, or refuse to install
	InstallOff     = "off"     // none, on purpose
)

// ForInstall decides the containment of the interactive sessions toolgate
// install gates. Landlock cannot reach them (the user starts claude), so
// the boundary is Claude Code's Bash sandbox.
func ForInstall(mode string) (Level, error) {
	missing := SandboxMissing()
	need := fmt.Sprintf("Claude Code's sandbox needs %s (apt-get install %s)", strings.Join(missing, " and "), strings.Join(missing, " "))
	switch mode {
	case InstallOff:
		return Level{LevelNone, "switched off (--containment off): the model's commands can signal and replace the gate"}, nil
	case InstallAuto, "":
		if len(missing) > 0 {
			return Level{LevelNone, need + ": the model's commands can signal and replace the gate"}, nil
		}
		return Level{LevelSandbox, "Bash runs in Claude Code's sandbox: " + sandboxDetail}, nil
	case InstallSandbox:
		if len(missing) > 0 {
			return Level{}, fmt.Errorf("--containment sandbox: %s", need)
		}
		return Level{LevelSandbox, "Bash runs in Claude Code's sandbox: " + sandboxDetail}, nil
	}
	return Level{}, fmt.Errorf("--containment must be auto, sandbox or off, not %q", mode)
}
