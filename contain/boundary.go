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
// sources, and /dev/ptmx for a terminal of its own. Not /dev itself
// (/dev/shm is a tmpfs that outlives the session), and no terminal the
// command did not open: Claude Code gives its commands none, and the
// person's (/dev/pts, /dev/tty) would let it paint over an approver's
// screen.
var Devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/ptmx"}

// ShellName is the program Claude Code runs every Bash command with under
// the boundary (CLAUDE_CODE_SHELL). Claude Code takes a shell only if its
// path names bash or zsh.
const ShellName = "toolgate-bash"

// PreloadName is the boundary as an object the dynamic loader puts in a
// bash (LD_PRELOAD), built from the same source as ShellName: it applies
// the boundary in the bash Claude Code starts, with no second exec.
const PreloadName = "toolgate-bash.so"

// DefaultShell is the bash that runs the commands.
const DefaultShell = "/bin/bash"

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
	// Own are directories replaced by an empty one of the session's own
	// (a tmpfs): what the session writes there stays in it, and what
	// others keep there (the person's other sessions' shell snapshots) is
	// out of its reach.
	Own []string
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
	}{{'w', b.Writable}, {'l', nonEmpty(b.Snapshots)}, {'p', b.Projects}, {'r', b.ReadOnly}, {'h', b.Hidden}, {'s', b.Own}, {'x', nonEmpty(b.Shell)}} {
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
	return Boundary{Projects: b.Projects, ReadOnly: b.ReadOnly, Hidden: b.Hidden, Own: b.Own}
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

// Shell is how Claude Code's Bash commands enter the boundary.
type Shell struct {
	// Path is what Claude Code runs each command with (CLAUDE_CODE_SHELL).
	Path string
	// Preload, when set, is PreloadName, and Path a link to bash: the
	// dynamic loader runs the boundary in the bash Claude Code starts at
	// Path (and in no other process). When empty, Path is ShellName,
	// which applies the boundary and then executes bash.
	Preload string
}

// SessionShell is the shell of a session toolgate starts: bash at a link
// of its own in dir (a directory only toolgate writes), with a copy of
// PreloadName, when it is beside the hook, in dir too; ShellName
// otherwise. ShellName makes the session's namespace either way, so
// without it the boundary's probe fails.
//
// The dynamic loader passes over a preload it cannot open and runs bash
// without it. With both in dir, and dir read-only in the session's
// namespace (its mode cannot change there), whatever keeps the loader
// from the copy (a directory above made unsearchable) keeps bash from
// starting too.
func SessionShell(hook, dir string) (Shell, error) {
	preload := filepath.Join(filepath.Dir(hook), PreloadName)
	_, noPreload := os.Stat(preload)
	if _, noShell := os.Stat(ShellPath(hook)); noShell != nil || noPreload != nil {
		return Shell{Path: ShellPath(hook)}, nil
	}
	data, err := os.ReadFile(preload)
	if err != nil {
		return Shell{}, err
	}
	copied := filepath.Join(dir, PreloadName)
	if err := os.WriteFile(copied, data, 0o500); err != nil {
		return Shell{}, err
	}
	link := filepath.Join(dir, "bash") // Claude Code takes a shell whose path names bash
	if err := os.Symlink(DefaultShell, link); err != nil {
		return Shell{}, err
	}
	return Shell{Path: link, Preload: copied}, nil
}

// Env is env with what makes Claude Code run each Bash command in the
// boundary enc: the shell, the boundary, and the preload ahead of one env
// already names.
func (s Shell) Env(env []string, enc string) []string {
	out := env[:0:0]
	preload := s.Preload
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		switch {
		case name == "LD_PRELOAD" && s.Preload != "":
			if value != "" {
				preload += ":" + value
			}
		case name != "CLAUDE_CODE_SHELL" && name != BoundaryEnv:
			out = append(out, kv)
		}
	}
	out = append(out, "CLAUDE_CODE_SHELL="+s.Path, BoundaryEnv+"="+enc)
	if preload != "" {
		out = append(out, "LD_PRELOAD="+preload)
	}
	return out
}

// ErrNoShell is a toolgate-bash that is missing or was built without cgo.
var ErrNoShell = errors.New(ShellName + " is missing or cannot run (it is built with cgo: scripts/build)")

// Probe runs one command in the boundary and reports why it cannot be
// applied on this machine: a session never claims a boundary that its
// first command would find missing.
func Probe(shell Shell, b Boundary) error {
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

// ProbeInstalled tries InstalledBoundary once, in a throwaway project,
// with ShellName at shell.
func ProbeInstalled(shell string) error {
	dir, err := os.MkdirTemp("", "toolgate-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	return probe(Shell{Path: shell}, InstalledBoundary, dir)
}

// applied is the probe's command: it succeeds only inside the system-call
// filter, the boundary's last step (a preload the dynamic loader passed
// over would leave bash without one).
const applied = `while read -r k v; do [ "$k" = Seccomp: ] && [ "$v" = 2 ] && exit 0; done </proc/self/status; exit 3`

func probe(shell Shell, enc, dir string) error {
	if _, err := os.Stat(shell.Path); err != nil {
		if shell.Preload == "" {
			return ErrNoShell
		}
		return err
	}
	cmd := exec.Command(shell.Path, "-c", applied)
	cmd.Dir = dir
	cmd.Env = shell.Env(os.Environ(), enc)
	out, err := cmd.CombinedOutput()
	if err != nil {
		why := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), ShellName+": the command did not run: "))
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 3 {
			why = strings.TrimSpace("bash ran outside the boundary: " + why)
		}
		if why == "" {
			why = err.Error()
		}
		return errors.New(why)
	}
	return nil
}
