package main

import (
	"os"

	"github.com/toolgate/toolgate/watch"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

func watchCommand() *cli.Command {
	return &cli.Command{
		Name:  "watch",
		Usage: "follow the asks as they come, and approve or deny them",
		Description: `On a terminal, a full-screen approver: every pending ask, the soonest to expire
first, and the selected one in full (session, the rule and its reason_code, the
time left, the input as a person reads it: a Bash command as the command, an
Edit as a diff), with decisions made elsewhere and expiries as they happen.
What runs is what is shown: long lines wrap, an input longer than the screen
says how much more there is and scrolls, and characters a terminal would not
show (bidi overrides, zero-width spaces) are shown by name, as ⟨U+202E⟩.
Single keys decide the selected ask:

   a             approve
   d             deny, then type a reason for the audit (Enter denies, Esc goes back)
   up/down, k/j  select
   PgDn/PgUp     scroll the selected input (also space and b)
   q             quit

A key decides exactly the approval it was pressed on: one decided elsewhere
meanwhile is refused by the daemon, never another one decided instead. It
reconnects by itself when the daemon restarts.

When stdin or stdout is not a terminal (or with --lines) it prints one line per
ask, decision and expiry, and reads commands, one per line:

   a ID          approve (a alone: the only pending ask)
   d ID [WHY]    deny, with an optional note for the audit
   s ID          show the ask's input whole
   q             quit

EXAMPLES
   toolgate watch
   toolgate watch --lines | tee -a approvals.log
   echo "a apr_01J..." | toolgate watch
   toolgate watch --fleet "postgres://alice@db.internal/toolgate?sslmode=verify-full"

With --fleet (or TOOLGATE_FLEET) it follows every host's asks in the fleet's
PostgreSQL and decides through its arbiter.

It starts no daemon: until one runs it says so and waits for it.

EXIT STATUS
   0    quit (q, or the end of the input)
   64   bad command line
   69   with --fleet: Postgres cannot be reached`,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "lines", Usage: "line mode, even on a terminal"},
			fleetFlag("follow every host's asks, from the fleet's PostgreSQL (a DSN with an approver's role)")},
		Action: func(cliCtx *cli.Context) error {
			client, done, err := approverSource(cliCtx)
			if err != nil {
				return err
			}
			defer done()
			in, out := cliCtx.App.Reader, cliCtx.App.Writer
			if !cliCtx.Bool("lines") && isTerminal(in) && isTerminal(out) {
				return watch.Screen(cliCtx.Context, client, in, out)
			}
			return watch.LineMode(cliCtx.Context, client, in, out)
		},
	}
}

// isTerminal reports whether f is a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(file.Fd()), unix.TCGETS)
	return err == nil
}
