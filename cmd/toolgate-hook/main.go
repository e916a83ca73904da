// Command toolgate-hook is the hook Claude Code spawns for every tool call
// of a gated session. It stays lean (see package hook): it reads one event
// on stdin, asks the daemon, and prints the answer. It always exits 0.
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/hook"
)

func main() {
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
