package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/internal/clip"
	"github.com/toolgate/toolgate/render"
	"github.com/urfave/cli/v2"
)

func auditCommand() *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "verify and export the audit trail",
		Description: `Every state change in the ledger (a call proposed, decided, executed; an approval
created and decided) is an event in an append-only chain: each event carries
the SHA-256 of the one before it, so a modified, deleted or reordered event
breaks the chain where it happened.

Without a subcommand it lists the calls through the daemon, oldest first: when each was
proposed, what decided it, whether it ran, and what the model saw.

EXAMPLES
   toolgate audit --session ses_01J...
   toolgate audit --json | jq '.calls[] | select(.effect == "deny")'
   toolgate audit verify
   toolgate audit export > audit.jsonl && toolgate audit verify --file audit.jsonl
   toolgate audit prune --before 2160h   # keep 90 days

EXIT STATUS
   0    listed
   64   bad command line
   65   no session with that id (--session)
   69   the daemon cannot be reached or started`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "session", Usage: "only the calls of this session"},
			jsonFlag(),
		},
		Subcommands: []*cli.Command{auditVerifyCommand(), auditExportCommand(), auditPruneCommand()},
		Action: func(cliCtx *cli.Context) error {
			if cliCtx.Args().Present() {
				return usagef("unknown command %q", cliCtx.Args().First())
			}
			return runAuditList(cliCtx.Context, cliCtx.App.Writer, cliCtx.String("session"), cliCtx.Bool("json"))
		},
	}
}

func ledgerFlag() cli.Flag {
	return &cli.StringFlag{Name: "ledger", Usage: "the ledger directory", EnvVars: []string{ledgerEnv},
		Value: defaultLedgerDir(), DefaultText: "$XDG_STATE_HOME/toolgate/ledger"}
}

// runAuditList lists calls through the daemon.
func runAuditList(ctx context.Context, w io.Writer, session string, asJSON bool) error {
	p, err := ensureDaemon(ctx)
	if err != nil {
		return err
	}
	gate := personClient(p.Socket())
	if session != "" {
		var se *client.StatusError
		if _, err := gate.Session(ctx, session); errors.As(err, &se) && se.Err.Code == "not_found" {
			return &dataError{fmt.Errorf("no session %q in the ledger\nTry: toolgate audit (every call, with its session); a toolgate run report names its session_id", session)}
		}
	}
	calls, err := gate.Calls(ctx, session)
	if client.IsUnavailable(err) {
		return &gateUnavailable{fmt.Errorf("%w\nTry: toolgate serve (or toolgate audit export --ledger DIR while no daemon runs)", err)}
	}
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(w, auditJSON{SchemaVersion: 1, Calls: calls})
	}
	printCalls(w, calls)
	return nil
}

// printCalls prints the audit's lines for a person. Everything in a call
// came from the model or from what its programs printed (tool_use_ids,
// tool names, what the model saw): each field goes through
// render.Printable, so that no escape sequence, C1 control or bidi
// control reaches the terminal, where it could erase or forge a line.
func printCalls(w io.Writer, calls []api.Call) {
	p := render.Printable
	for _, c := range calls {
		decided := "undecided"
		if c.Effect != "" {
			decided = string(c.Effect) + " by " + c.Source
			if c.Actor != "" {
				decided += " " + c.Actor
			}
			if c.RuleID != "" {
				decided += " (rule " + c.RuleID + ")"
			}
			if c.ReasonCode != "" {
				decided += " " + c.ReasonCode
			}
		}
		ran := "not run"
		if c.Executed {
			ran = "executed"
		}
		if c.Executions > 1 {
			ran = fmt.Sprintf("EXECUTED %d TIMES", c.Executions)
		}
		fmt.Fprintf(w, "%s  %s  %-28s proposed -> %s -> %s\n", c.ProposedAt.Local().Format(time.DateTime), p(c.ToolUseID), p(c.ToolName), p(decided), ran)
		if c.Seen != "" {
			fmt.Fprintf(w, "    model saw: %s\n", clip.String(p(strings.ReplaceAll(c.Seen, "\n", " ")), 160))
		}
		for _, r := range c.Repeats {
			again := "proposed again"
			if r.Resume {
				again = "resumed"
			}
			fmt.Fprintf(w, "    %s %s in %s -> %s %s\n", again, r.ProposedAt.Local().Format(time.DateTime), p(r.SessionID), p(string(r.Effect)), p(r.ReasonCode))
		}
	}
}

type auditJSON struct {
	SchemaVersion int        `json:"schema_version"`
	Calls         []api.Call `json:"calls"`
}
