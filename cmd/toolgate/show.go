package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/urfave/cli/v2"
)

func showCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "show one approval: the record, the decision and the write-back",
		ArgsUsage: "ID",
		Description: `Shows an approval record, the decision on it and the write-back, the seed's three
documents: --json prints them as {"schema_version", "approval", "reason_code",
"decision", "write_back"}, each as its schema describes it (toolgate schema
approval, decision, write-back). The decision is the seed's: allow or deny
(an expiry is a deny, reason_code approval_expired), or ask when Claude Code's
own dialog decided (handed_to_claude); the record's status says approved,
denied or expired.

EXAMPLES
   toolgate show apr_01J...
   toolgate show --json apr_01J... | jq .decision
   toolgate show apr_01J... --fleet "$ALICE_DSN"

` + approverExitStatus,
		Flags: []cli.Flag{jsonFlag(), fleetFlag("show an ask of the fleet's PostgreSQL (a DSN with an approver's or auditor's role)")},
		Action: func(cliCtx *cli.Context) error {
			id, err := oneID(cliCtx)
			if err != nil {
				return err
			}
			source, done, err := approverSource(cliCtx)
			if err != nil {
				return err
			}
			defer done()
			d, err := source.Approval(cliCtx.Context, id)
			if err != nil {
				return approverError(err)
			}
			if cliCtx.Bool("json") {
				return writeJSON(cliCtx.App.Writer, struct {
					SchemaVersion int `json:"schema_version"`
					api.ApprovalDetail
				}{1, d})
			}
			w := cliCtx.App.Writer
			printApproval(w, d)
			fmt.Fprintf(w, "    input: %s\n", strings.TrimSpace(string(d.Approval.Input)))
			printDecision(w, d)
			return nil
		},
	}
}

// printDecision shows what came of an approval: who decided, the
// decision (the seed's allow, deny or ask), and what was written back.
func printDecision(w io.Writer, d api.ApprovalDetail) {
	if dec := d.Decision; dec != nil {
		who := dec.Actor
		if dec.ActorPID > 0 {
			who += fmt.Sprintf(" (pid %d, %s)", dec.ActorPID, dec.ActorExe)
		}
		fmt.Fprintf(w, "    %s by %s at %s: decision %s, reason_code %s\n", d.Approval.Status, who,
			dec.DecidedAt.Local().Format(time.RFC3339), dec.Decision, dec.ReasonCode)
		if dec.Note != "" {
			fmt.Fprintf(w, "    note: %s\n", dec.Note)
		}
	}
	if wb := d.WriteBack; wb != nil {
		what := "written back to claude"
		if !wb.WroteBack {
			what = "nothing written back: claude's own dialog decided"
		}
		fmt.Fprintf(w, "    %s: %s (reason_code %s)\n", what, wb.Effect, wb.ReasonCode)
	}
}
