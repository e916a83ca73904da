// Command toolgate is the permission gate for the Claude Code CLI: it wraps
// claude -p (run), serves the gate daemon (serve), lets a person approve or
// deny what an agent asks (pending, approve, deny, watch, notify, web), sets
// up and joins a fleet on PostgreSQL (fleet, serve --fleet), installs
// the hook for interactive sessions, audits the record, and checks and
// explains policies. Each command is in a file of its own; errors become
// exit codes in exitcode.go only.
//
// Environment variables (each is also a flag; the flag wins):
//
//	TOOLGATE_POLICY        the policy file (run, policy test / explain / export-settings)
//	TOOLGATE_LEDGER        the ledger directory
//	TOOLGATE_RUNTIME_DIR   sockets and locks ($XDG_RUNTIME_DIR/toolgate); when set,
//	                       the daemon is looked for there only (see paths.From)
//	TOOLGATE_STATE_DIR     the ledger and the daemon's log ($XDG_STATE_HOME/toolgate)
//	TOOLGATE_CLAUDE        the claude executable (run, demo)
//	TOOLGATE_HOOK          the toolgate-hook executable (run)
//	TOOLGATE_REPORT, TOOLGATE_APPROVAL_TIMEOUT, TOOLGATE_ON_ASK, TOOLGATE_IDLE_EXIT: run's and serve's flags
//	TOOLGATE_FLEET         the fleet's PostgreSQL DSN (serve: a host's role, else
//	                       $XDG_CONFIG_HOME/toolgate/fleet.dsn; approvers: an approver's role)
//	TOOLGATE_WEB_LISTEN, TOOLGATE_WEBHOOK: web's flags
//	XDG_RUNTIME_DIR, XDG_STATE_HOME, XDG_CONFIG_HOME, XDG_CACHE_HOME, HOME
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
