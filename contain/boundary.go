package contain

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Devices are the device files a command may write: the usual sinks and
// terminals, not /dev itself (/dev/shm is a tmpfs that outlives the
// session).
var Devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts"}

// ShellName is the program Claude Code runs every Bash command with under
// the boundary (CLAUDE_CODE_SHELL). Claude Code takes a shell only if its
// path names bash or zsh.
const ShellName = "toolgate-bash"

// BoundaryEnv is the variable ShellName reads its boundary from.
const BoundaryEnv = "TOOLGATE_BOUNDARY"

// EnterFlag is ShellName's mode that enters the session's user and mount
// namespace, makes a project's protected paths read-only in it, and then
// executes a program (claude): "toolgate-bash --enter BOUNDARY PROGRAM ARGS".
const EnterFlag = "--enter"

// Boundary is what a Bash command may touch: the writes it may make, the
// paths it may not change inside them, and whether it has a network. Unix
// sockets it has never (the gate, an approver, the desktop bus and a tmux
// server all listen on one).
type Boundary struct {
	// Writable are the trees a command may write in (Landlock): the
	// project, the session's temp dir, the caches a user declares.
	Writable []string
	// Snapshots is Claude Code's shell-snapshot directory: writable only
	// to the "-c -l" start Claude Code makes the snapshot with, never to
	// a command, since every later command sources what is there.
	Snapshots string
	// Projects are project roots whose .git (pinned in place), git's
	// config and hooks, .claude and .mcp.json are read-only: what starts
	// code outside the boundary later.
	Projects []string
	// ReadOnly are further paths made read-only where they exist (a
	// worktree's real git directory).
	ReadOnly []string
	// Hidden are directories covered by an empty tmpfs.
	Hidden []string
	// NoNetwork refuses every socket.
	NoNetwork bool
	// Shell is what runs the command, /bin/bash when empty.
	Shell string
}

// Encode is the boundary as ShellName reads it, one entry a line.
func (b Boundary) Encode() (string, error) {
	var s strings.Builder
	for _, list := range []struct {
		op    byte
		paths []string
	}{{'w', b.Writable}, {'l', nonEmpty(b.Snapshots)}, {'p', b.Projects}, {'r', b.ReadOnly}, {'h', b.Hidden}, {'x', nonEmpty(b.Shell)}} {
		for _, p := range list.paths {
			if !filepath.IsAbs(p) || strings.ContainsAny(p, "\n\x00") {
				return "", fmt.Errorf("the boundary takes absolute paths without a newline, not %q", p)
			}
			fmt.Fprintf(&s, "%c %s\n", list.op, filepath.Clean(p))
		}
	}
	if b.NoNetwork {
		s.WriteString("n\n")
	}
	return s.String(), nil
}

// Namespaced is the part of the boundary that needs a user and mount
// namespace, for EnterFlag.
func (b Boundary) Namespaced() Boundary {
	return Boundary{Projects: b.Projects, ReadOnly: b.ReadOnly, Hidden: b.Hidden}
}

// PerCommand is the part that each command enters on its own, once the
// session is inside the namespaced part.
func (b Boundary) PerCommand() Boundary {
	return Boundary{Writable: b.Writable, Snapshots: b.Snapshots, NoNetwork: b.NoNetwork, Shell: b.Shell}
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// GitDirs are the paths of a worktree's real git directory that git runs
// code from (config and hooks), when project's .git is a file naming one:
// they are outside the project, but maybe inside another writable tree.
func GitDirs(project string) []string {
	data, err := os.ReadFile(filepath.Join(project, ".git"))
	if err != nil {
		return nil // a directory (Projects covers it), or none
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !ok {
		return nil
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(project, gitdir)
	}
	paths := []string{filepath.Join(gitdir, "config.worktree"), filepath.Join(gitdir, "commondir")}
	common := gitdir
	if c, err := os.ReadFile(filepath.Join(gitdir, "commondir")); err == nil {
		common = strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitdir, common)
		}
	}
	return append(paths, filepath.Join(common, "config"), filepath.Join(common, "hooks"))
}

// ShellPath is ShellName beside the hook binary.
func ShellPath(hook string) string { return filepath.Join(filepath.Dir(hook), ShellName) }

// ErrNoShell is a toolgate-bash that is missing or was built without cgo.
var ErrNoShell = errors.New(ShellName + " is missing or cannot run (it is built with cgo: CGO_ENABLED=1 go build -o bin/ ./cmd/toolgate-bash)")

// Probe runs one command in the boundary and reports why it cannot be
// applied on this machine: a session never claims a boundary that its
// first command would find missing.
func Probe(shell string, b Boundary) error {
	enc, err := b.Encode()
	if err != nil {
		return err
	}
	return probe(shell, enc, "")
}

// InstalledBoundary is the boundary toolgate install writes for the
// sessions it gates but does not start, which a settings file must name
// without knowing them: each command writes in its project (the nearest
// directory from its working directory up that holds .git), whose
// protected paths are read-only, in the temp dir and Devices. The namespace
// is made per command.
var InstalledBoundary = "w @project\np @project\nw @tmp\nl @snapshots\n" + devicesEncoded()

func devicesEncoded() string {
	var s strings.Builder
	for _, d := range Devices {
		s.WriteString("w " + d + "\n")
	}
	return s.String()
}

// ProbeInstalled tries InstalledBoundary once, in a throwaway project.
func ProbeInstalled(shell string) error {
	dir, err := os.MkdirTemp("", "toolgate-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	return probe(shell, InstalledBoundary, dir)
}

func probe(shell, enc, dir string) error {
	if _, err := os.Stat(shell); err != nil {
		return ErrNoShell
	}
	cmd := exec.Command(shell, "-c", "exit 0")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), BoundaryEnv+"="+enc)
	out, err := cmd.CombinedOutput()
	if err != nil {
		why := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), ShellName+": the command did not run: "))
		if why == "" {
			why = err.Error()
		}
		return errors.New(why)
	}
	return nil
}
