// Command toolgate-hook is the hook Claude Code spawns for every tool call
// of a gated session. It stays lean (see package hook): it reads one event
// on stdin, asks the daemon, and prints the answer. It always exits 0.
package main

import (
	"os"

	"github.com/toolgate/toolgate/hook"
)

func main() {
	os.Exit(hook.Main(os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
