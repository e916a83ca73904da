package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/urfave/cli/v2"
)

func auditPruneCommand() *cli.Command {
	return &cli.Command{
		Name:      "prune",
		Usage:     "remove what is older than a date from the ledger",
		ArgsUsage: " ",
		Description: `Removes from the ledger the audit events recorded before --before, and the
sessions that ended before it with their calls, approvals, decisions and
write-backs; then compacts the ledger: what is current is written into new
files, and the old ones are removed (the line "ledger files" says what it gave
back; calls wait only while what changed meanwhile is copied). Sessions still
running, or ended since, stay whole.

The chain that remains still verifies: the last event removed becomes its
base, whose hash the first remaining event carries, and the prune itself is
recorded in the chain (an audit_pruned event naming the base, the date and
who pruned). audit verify and audit export start from the base; an anchor
(--anchor) older than it can no longer be checked. Keep the printed base
(SEQ:HASH) with your reports: it anchors what remains. Export first what you
must keep (toolgate audit export).

A process of a gated session (or descending from one) is refused, as it would
be as an approver. A session deferred for toolgate resume stays, however old.
In a fleet the chain is also the outbox: every event PostgreSQL does not hold
yet stays, and while PostgreSQL cannot be asked nothing is pruned.

EXAMPLES
   toolgate audit export -o audit-$(date +%F).jsonl && toolgate audit prune --before 2026-09-01
   toolgate audit prune --before 2160h --json       # older than 90 days

EXIT STATUS
   0    pruned (or nothing to prune)
   64   bad command line: --before is missing or is not a time
   66   no ledger there
   69   the daemon cannot be reached or started, or another process holds the ledger;
        or, in a fleet, PostgreSQL cannot say which events it holds (nothing is pruned)
   77   refused: the caller runs inside a gated session`,
		Flags: []cli.Flag{
			ledgerFlag(),
			&cli.StringFlag{Name: "before", Usage: "remove what is older than `TIME` (RFC 3339, a date, or a duration ago: 720h)", Required: true},
			jsonFlag(),
		},
		Action: func(cliCtx *cli.Context) error {
			before, err := parseWhen(cliCtx.String("before"), time.Now())
			if err != nil || before.IsZero() {
				return usagef("--before: %v", err)
			}
			ledgerDir := ""
			if cliCtx.IsSet("ledger") {
				ledgerDir = cliCtx.String("ledger")
			}
			return runAuditPrune(cliCtx.Context, cliCtx.App.Writer, ledgerDir, before, cliCtx.Bool("json"))
		},
	}
}

// pruneJSON is audit prune --json's output.
type pruneJSON struct {
	SchemaVersion int `json:"schema_version"`
	api.Pruned
}

func runAuditPrune(ctx context.Context, w io.Writer, ledgerDir string, before time.Time, asJSON bool) error {
	var rec api.Pruned
	err := withAuditor(ctx, ledgerDir, func(c *client.Client) error {
		var err error
		rec, err = c.PruneAudit(ctx, before)
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(w, pruneJSON{1, rec})
	}
	fmt.Fprintf(w, "pruned before %s: %d events, %d sessions, %d calls; recorded as event %d\n",
		rec.Before.Local().Format(time.RFC3339), rec.Events, rec.Sessions, rec.Calls, rec.Event)
	if rec.BaseSeq > 0 {
		fmt.Fprintf(w, "the chain goes on from event %d: keep this anchor: %d:%s\n", rec.BaseSeq, rec.BaseSeq, rec.BaseHash)
	}
	fmt.Fprintf(w, "ledger files: %.1f MB -> %.1f MB\n", float64(rec.BytesBefore)/1e6, float64(rec.BytesAfter)/1e6)
	return nil
}
