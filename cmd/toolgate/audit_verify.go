package main

import (
	"context"
	"encoding/json"
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
kept for inspection) a private daemon is started for it and stopped after.

An exported file (--file) is checked twice: its own chain, then against the
ledger's record of that export (every export is recorded in the chain, and
the file's last line names the record). A file whose tail was cut, or whose
chain was rewritten and hashed again, fails the second check. --offline
checks the file's chain alone (no ledger at hand): that finds a modified,
missing or reordered event, but neither a cut tail nor a chain rewritten
whole. Quiet when all holds; --json prints the event count and the head hash
either way.

EXAMPLES
   toolgate audit verify
   toolgate audit verify --ledger /srv/backup/toolgate-ledger
   toolgate audit verify --file audit.jsonl --json
   toolgate audit verify --file audit.jsonl --offline

EXIT STATUS
   0    the chain is intact
   65   the chain is broken (EX_DATAERR)
   64   bad command line
   66   no ledger or file there
   69   the daemon cannot be reached or started, or another process holds the ledger (EX_UNAVAILABLE)`,
		Flags: []cli.Flag{ledgerFlag(),
			&cli.StringFlag{Name: "file", Usage: "verify an exported chain (JSON lines) instead of a ledger"},
			&cli.BoolFlag{Name: "offline", Usage: "with --file: check the file's chain alone, not against the ledger's record of the export"},
			jsonFlag()},
		Action: func(cliCtx *cli.Context) error {
			ledgerDir := ""
			if cliCtx.IsSet("ledger") {
				ledgerDir = cliCtx.String("ledger")
			}
			return runAuditVerify(cliCtx.Context, cliCtx.App.Writer, verifyOptions{ledgerDir: ledgerDir, file: cliCtx.String("file"),
				offline: cliCtx.Bool("offline"), asJSON: cliCtx.Bool("json")})
		},
	}
}

type verifyJSON struct {
	SchemaVersion int `json:"schema_version"`
	api.VerifyResult
}

type verifyOptions struct {
	ledgerDir, file string
	offline, asJSON bool
}

func runAuditVerify(ctx context.Context, w io.Writer, opts verifyOptions) error {
	var res api.VerifyResult
	var err error
	if opts.file != "" {
		res, err = verifyFile(ctx, opts)
	} else {
		err = withAuditor(ctx, opts.ledgerDir, func(c *api.Client) error {
			var err error
			res, err = c.VerifyAudit(ctx)
			return err
		})
	}
	if err != nil && !errors.As(err, &res.Broken) {
		return err
	}
	if res.Broken != nil {
		res.Valid = false
	}
	if opts.asJSON {
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

// verifyFile checks an export's chain and, unless offline, the ledger's
// record of that export.
func verifyFile(ctx context.Context, opts verifyOptions) (api.VerifyResult, error) {
	f, err := os.Open(opts.file)
	if err != nil {
		return api.VerifyResult{}, err
	}
	defer f.Close()
	res, trailer, err := ledger.VerifyExport(f)
	if err != nil || opts.offline {
		return res, err
	}
	if trailer == nil {
		return res, ledger.CheckExport(res, nil, ledger.Event{})
	}
	var recorded ledger.Event
	err = withAuditor(ctx, opts.ledgerDir, func(c *api.Client) error {
		raw, err := c.AuditEvent(ctx, trailer.Event)
		var se *api.StatusError
		if errors.As(err, &se) && se.Err.Code == "not_found" {
			return nil // no such event: CheckExport says so
		}
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &recorded)
	})
	if err != nil {
		return res, fmt.Errorf("%w\nTry: --offline checks the file's chain alone", err)
	}
	if err := ledger.CheckExport(res, trailer, recorded); err != nil {
		return res, err
	}
	res.Export = trailer
	return res, nil
}
