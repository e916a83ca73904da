// Command toolgate is the permission gate for the Claude Code CLI: it checks
// and explains policies and, in later layers, runs the gate daemon, wraps
// claude -p, and lets a person approve or deny what an agent asks to do.
//
// Environment variables (each is also a flag; the flag wins):
//
//	TOOLGATE_POLICY   the policy file of policy test / explain / export-settings
//	HOME              where "~" in policy paths expands to
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	app := newApp(os.Stdin, os.Stdout, os.Stderr)
	err := app.RunContext(ctx, interspersed(app, os.Args))
	stop()
	os.Exit(exitCode(err, os.Stderr))
}
