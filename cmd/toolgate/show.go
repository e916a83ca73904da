package main

import (
	"fmt"
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
		Description: `EXAMPLES
   toolgate show apr_01J...
   toolgate show --json apr_01J...

` + approverExitStatus,
		Flags: []cli.Flag{jsonFlag()},
		Action: func(cliCtx *cli.Context) error {
			id, err := oneID(cliCtx)
			if err != nil {
				return err
			}
			client, err := approverClient(cliCtx.Context)
			if err != nil {
				return err
			}
			d, err := client.Approval(cliCtx.Context, id)
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
			if dec := d.Decision; dec != nil {
				fmt.Fprintf(w, "    %s by %s (pid %d, %s) at %s, reason_code %s\n", dec.Decision, dec.Actor, dec.ActorPID,
					dec.ActorExe, dec.DecidedAt.Local().Format(time.RFC3339), dec.ReasonCode)
				if dec.Note != "" {
					fmt.Fprintf(w, "    note: %s\n", dec.Note)
				}
			}
			if wb := d.WriteBack; wb != nil {
				fmt.Fprintf(w, "    written back to claude: %s (reason_code %s)\n", wb.Effect, wb.ReasonCode)
			}
			return nil
		},
	}
}
