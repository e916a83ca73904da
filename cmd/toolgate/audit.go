package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/supervisor/api"
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

Without a subcommand it lists the calls through the daemon: when each was
proposed, what decided it, whether it ran, and what the model saw.

EXAMPLES
   toolgate audit --session ses_01J...
   toolgate audit --json | jq '.calls[] | select(.effect == "deny")'
   toolgate audit verify
   toolgate audit export > audit.jsonl && toolgate audit verify --file audit.jsonl

` + exitStatusHelp,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "session", Usage: "only the calls of this session"},
			jsonFlag(),
		},
		Subcommands: []*cli.Command{auditVerifyCommand(), auditExportCommand()},
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

func auditVerifyCommand() *cli.Command {
	return &cli.Command{
		Name:  "verify",
		Usage: "check that the audit chain is unbroken",
		Description: `Walks the whole chain and reports the first broken link: the event number and
whether it was modified, is missing, is out of order, or the chain was cut
short. Works on a ledger directory that no daemon holds, or on an exported
file (--file). Quiet when the chain is intact; --json prints the event count
and the head hash either way.

EXAMPLES
   toolgate audit verify --ledger ~/.local/state/toolgate/ledger
   toolgate audit verify --file audit.jsonl --json

EXIT STATUS
   0    the chain is intact
   65   the chain is broken (EX_DATAERR)
   66   no ledger or file there
   69   a running toolgate serve holds the ledger (EX_UNAVAILABLE)`,
		Flags: []cli.Flag{ledgerFlag(),
			&cli.StringFlag{Name: "file", Usage: "verify an exported chain (JSON lines) instead of a ledger"},
			jsonFlag()},
		Action: func(cliCtx *cli.Context) error {
			return runAuditVerify(cliCtx.Context, cliCtx.App.Writer, cliCtx.String("ledger"), cliCtx.String("file"), cliCtx.Bool("json"))
		},
	}
}

type verifyJSON struct {
	SchemaVersion int                `json:"schema_version"`
	Valid         bool               `json:"valid"`
	Events        uint64             `json:"events"`
	Head          string             `json:"head,omitempty"`
	Broken        *ledger.ChainError `json:"broken,omitempty"`
}

func runAuditVerify(ctx context.Context, w io.Writer, dir, file string, asJSON bool) error {
	var res ledger.VerifyResult
	var err error
	if file != "" {
		f, ferr := os.Open(file)
		if ferr != nil {
			return ferr
		}
		defer f.Close()
		res, err = ledger.VerifyExport(f)
	} else {
		err = withLedger(dir, func(l *ledger.Ledger) error {
			res, err = l.Verify(ctx)
			return err
		})
	}
	var broken *ledger.ChainError
	if err != nil && !errors.As(err, &broken) {
		return err
	}
	if asJSON {
		if err := writeJSON(w, verifyJSON{1, broken == nil, res.Events, res.Head, broken}); err != nil {
			return err
		}
		if broken != nil {
			return &exitStatus{exitDataErr}
		}
		return nil
	}
	if broken != nil {
		return &dataError{fmt.Errorf("%w\nThe events before it are intact; keep a copy of the ledger for inspection", broken)}
	}
	return nil
}

func auditExportCommand() *cli.Command {
	return &cli.Command{
		Name:  "export",
		Usage: "write the audit chain as JSON lines",
		Description: `Writes every event of the chain, in order, one JSON object a line, exactly as
stored: {"seq","time","kind","subject","data","prev_hash","hash"}. The file can
be checked later with toolgate audit verify --file.

EXAMPLES
   toolgate audit export > audit.jsonl
   toolgate audit export --output audit.jsonl

EXIT STATUS
   0    written
   66   no ledger there
   69   a running toolgate serve holds the ledger (EX_UNAVAILABLE)`,
		Flags: []cli.Flag{ledgerFlag(), &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to FILE instead of standard output"}},
		Action: func(cliCtx *cli.Context) error {
			return runAuditExport(cliCtx.Context, cliCtx.App.Writer, cliCtx.String("ledger"), cliCtx.String("output"))
		},
	}
}

func runAuditExport(ctx context.Context, w io.Writer, dir, output string) error {
	if output != "" {
		f, err := os.OpenFile(output, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	return withLedger(dir, func(l *ledger.Ledger) error { return l.Export(ctx, w) })
}

// gateUnavailable is the gate's daemon or ledger being out of reach.
type gateUnavailable struct{ err error }

func (e *gateUnavailable) Error() string { return e.err.Error() }
func (e *gateUnavailable) Unwrap() error { return e.err }

// withLedger opens the ledger directly, for the commands that work on a
// ledger no daemon holds.
func withLedger(dir string, fn func(*ledger.Ledger) error) error {
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("no ledger at %s: %w\nTry: --ledger DIR or %s", dir, err, ledgerEnv)
	}
	l, err := ledger.Open(dir, ledger.Options{})
	if ledger.IsLocked(err) {
		return &gateUnavailable{fmt.Errorf("%w\nTry: stop the daemon first (toolgate serve, or systemctl --user stop toolgate), then run this again", err)}
	}
	if err != nil {
		return err
	}
	err = fn(l)
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	return err
}

// runAuditList lists calls through the daemon.
func runAuditList(ctx context.Context, w io.Writer, session string, asJSON bool) error {
	if err := ensureDaemon(ctx); err != nil {
		return err
	}
	client := api.NewClient(gatePaths("").Socket())
	calls, err := client.Calls(ctx, session)
	if api.IsUnavailable(err) {
		return &gateUnavailable{fmt.Errorf("%w\nTry: toolgate serve (or toolgate audit export --ledger DIR while no daemon runs)", err)}
	}
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(w, auditJSON{SchemaVersion: 1, Calls: calls})
	}
	for _, c := range calls {
		decided := "undecided"
		if c.Effect != "" {
			decided = c.Effect + " by " + c.Source
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
		fmt.Fprintf(w, "%s  %s  %-28s proposed -> %s -> %s\n", c.ProposedAt.Local().Format("15:04:05"), c.ToolUseID, c.ToolName, decided, ran)
		if c.Seen != "" {
			fmt.Fprintf(w, "    model saw: %s\n", clipText(strings.ReplaceAll(c.Seen, "\n", " "), 160))
		}
	}
	return nil
}

type auditJSON struct {
	SchemaVersion int        `json:"schema_version"`
	Calls         []api.Call `json:"calls"`
}
