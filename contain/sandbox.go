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
	InstallAuto     = "auto"     // the boundary where the kernel allows it, else the sandbox where it is installed, else none, said plainly
	InstallBoundary = "boundary" // toolgate's Bash boundary, or refuse to install
	InstallSandbox  = "sandbox"  // Claude Code's sandbox, or refuse to install
	InstallOff      = "off"      // none, on purpose
)

// ForInstall decides the containment of the interactive sessions toolgate
// install gates. Landlock cannot reach claude itself (the user starts it),
// so the boundary is each Bash command's: toolgate's (shell is
// toolgate-bash, tried once here), or Claude Code's sandbox.
func ForInstall(mode, shell string) (Level, error) {
	missing := SandboxMissing()
	need := fmt.Sprintf("Claude Code's sandbox needs %s (apt-get install %s)", strings.Join(missing, " and "), strings.Join(missing, " "))
	sandbox := Level{Name: LevelSandbox, Detail: "Bash runs in Claude Code's sandbox: " + sandboxDetail}
	boundary := func() (Level, error) {
		if err := ProbeInstalled(shell); err != nil {
			return Level{}, err
		}
		b := Boundary{}
		return Level{Name: LevelBoundary, Detail: "each Bash command writes only in its project, the temp dir and the usual devices, cannot change git's config and hooks, .claude or .mcp.json, has no Unix sockets, network on", Boundary: &b}, nil
	}
	switch mode {
	case InstallOff:
		return Level{Name: LevelNone, Detail: "switched off (--containment off): " + Unprotected}, nil
	case InstallAuto, "":
		if l, err := boundary(); err == nil {
			return l, nil
		}
		if len(missing) > 0 {
			return Level{Name: LevelNone, Detail: "no Bash boundary, and " + need + ": " + Unprotected}, nil
		}
		return sandbox, nil
	case InstallBoundary:
		l, err := boundary()
		if err != nil {
			return Level{}, fmt.Errorf("--containment boundary: the Bash boundary cannot be applied here: %w", err)
		}
		return l, nil
	case InstallSandbox:
		if len(missing) > 0 {
			return Level{}, fmt.Errorf("--containment sandbox: %s", need)
		}
		return sandbox, nil
	}
	return Level{}, fmt.Errorf("--containment must be auto, boundary, sandbox or off, not %q", mode)
}
