package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/ledger"
	"github.com/urfave/cli/v2"
)

func auditVerifyCommand() *cli.Command {
	return &cli.Command{
		Name:  "verify",
		Usage: "check that the audit chain is unbroken",
		Description: `Walks the whole chain and reports the first broken link: the event number and
whether it was modified, is missing, is out of order, or the chain was cut
short. The daemon reads the ledger (it is the only process that opens it), so
this works while sessions run; for a ledger no daemon serves (--ledger, a copy
kept for inspection) a private daemon is started for it and stopped after. An
exported file (--file) is checked here, without a daemon. Quiet when the chain
is intact; --json prints the event count and the head hash either way.

EXAMPLES
   toolgate audit verify
   toolgate audit verify --ledger /srv/backup/toolgate-ledger
   toolgate audit verify --file audit.jsonl --json

EXIT STATUS
   0    the chain is intact
   65   the chain is broken (EX_DATAERR)
   66   no ledger or file there
   69   the daemon cannot be reached or started, or another process holds the ledger (EX_UNAVAILABLE)`,
		Flags: []cli.Flag{ledgerFlag(),
			&cli.StringFlag{Name: "file", Usage: "verify an exported chain (JSON lines) instead of a ledger"},
			jsonFlag()},
		Action: func(cliCtx *cli.Context) error {
			ledgerDir := ""
			if cliCtx.IsSet("ledger") {
				ledgerDir = cliCtx.String("ledger")
			}
			return runAuditVerify(cliCtx.Context, cliCtx.App.Writer, ledgerDir, cliCtx.String("file"), cliCtx.Bool("json"))
		},
	}
}

type verifyJSON struct {
	SchemaVersion int `json:"schema_version"`
	api.VerifyResult
}

func runAuditVerify(ctx context.Context, w io.Writer, ledgerDir, file string, asJSON bool) error {
	var res api.VerifyResult
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		res, err = ledger.VerifyExport(f)
		if !errors.As(err, &res.Broken) && err != nil {
			return err
		}
	} else {
		err := withAuditor(ctx, ledgerDir, func(c *api.Client) error {
			var err error
			res, err = c.VerifyAudit(ctx)
			return err
		})
		if err != nil {
			return err
		}
	}
	if asJSON {
		if err := writeJSON(w, verifyJSON{1, res}); err != nil {
			return err
		}
		if res.Broken != nil {
			return &exitStatus{exitDataErr}
		}
		return nil
	}
	if res.Broken != nil {
		return &dataError{fmt.Errorf("%w\nThe events before it are intact; keep a copy of the ledger for inspection", res.Broken)}
	}
	return nil
}
