//go:build cgo

// Command toolgate-bash is the shell Claude Code runs every Bash command
// with in a gated session (CLAUDE_CODE_SHELL). Before main runs, the C
// constructor in boundary.c has applied the boundary TOOLGATE_BOUNDARY
// describes and executed bash: main runs only when it could not, and then
// says why and exits 126, so the command never runs unbounded.
package main

// extern char toolgate_bash_error[1024];
import "C"

import (
	"fmt"
	"os"
)

// exitCannotRun is the shell's "command found but not executable".
const exitCannotRun = 126

func main() {
	fmt.Fprintf(os.Stderr, "toolgate-bash: the command did not run: %s (reason: boundary_failed)\n", C.GoString(&C.toolgate_bash_error[0]))
	os.Exit(exitCannotRun)
}
