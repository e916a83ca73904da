// Command toolgate-hook is the hook Claude Code spawns for every tool call
// of a gated session. It stays lean (see package hook): it reads one event
// on stdin, asks the daemon, and prints the answer. It always exits 0.
//
// toolgate run also starts a contained claude through it, as
// "toolgate-hook contain --parent PID -- claude ARGS": this binary starts
// in about a millisecond, toolgate in about ten (its packages'
// initialisation), and that start is on the way to claude's.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/contain"
	"github.com/toolgate/toolgate/hook"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == contain.Command {
		os.Exit(containMain(os.Args[2:]))
	}
	os.Exit(hook.Main(hook.Process{Args: os.Args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv: os.Getenv, DaemonExe: daemonExe(), StartDaemon: startDaemon}))
}

// daemonExe is TOOLGATE_DAEMON_EXE, or the toolgate binary beside this one.
func daemonExe() string {
	if exe := os.Getenv("TOOLGATE_DAEMON_EXE"); exe != "" {
		return exe
	}
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	return filepath.Join(filepath.Dir(self), "toolgate")
}

// startDaemon runs "toolgate serve --background" from beside this binary:
// it starts a daemon detached from this process tree, and returns once it
// is ready.
func startDaemon(ctx context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(filepath.Dir(self), "toolgate"), "serve", "--background")
	cmd.Stderr = &stderr // never our stdout: it is the answer to Claude Code
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("toolgate serve --background: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// containMain enters the session's Landlock domain, then becomes the
// command after "--" (claude). It returns only when the command could not
// start: 64 for a wrong command line, 69 when the domain could not be
// entered or toolgate run is gone.
func containMain(args []string) int {
	fs := flag.NewFlagSet("toolgate-hook contain", flag.ContinueOnError)
	parent := fs.Int("parent", 0, "the pid of the toolgate run this belongs to")
	readyFD := fs.Int("ready", -1, "a descriptor to write \""+contain.Ready+"\" to as COMMAND is executed")
	if err := fs.Parse(args); err != nil {
		return 64
	}
	if *parent <= 0 || fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: toolgate-hook contain --parent PID [--ready FD] -- COMMAND [ARGS] (toolgate run starts claude this way)")
		return 64
	}
	var ready *os.File
	if *readyFD >= 0 {
		ready = os.NewFile(uintptr(*readyFD), "ready")
	}
	err := contain.Contain(fs.Args(), os.Environ(), *parent, ready)
	fmt.Fprintf(os.Stderr, "toolgate-hook: %v\n", err)
	return 69
}
