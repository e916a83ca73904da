package main

import (
	"github.com/toolgate/toolgate/api"
	"github.com/urfave/cli/v2"
)

func pendingCommand() *cli.Command {
	return &cli.Command{
		Name:  "pending",
		Usage: "list the asks waiting for a person",
		Description: `Lists every pending approval: its id, the session, the tool and its input in
short, the rule that asked, and the time left before it expires (and is denied
approval_expired).

EXAMPLES
   toolgate pending
   toolgate pending --json | jq -r '.approvals[].approval.id'

EXIT STATUS
   0    listed (nothing when nothing waits)
   64   bad command line
   69   no daemon is running (it starts none: with none, no ask waits)`,
		Flags: []cli.Flag{jsonFlag()},
		Action: func(cliCtx *cli.Context) error {
			list, err := approverClient().Pending(cliCtx.Context)
			if err != nil {
				return approverError(err)
			}
			if cliCtx.Bool("json") {
				return writeJSON(cliCtx.App.Writer, struct {
					SchemaVersion int                  `json:"schema_version"`
					Approvals     []api.ApprovalDetail `json:"approvals"`
				}{1, list})
			}
			for _, a := range list {
				printApproval(cliCtx.App.Writer, a)
			}
			return nil
		},
	}
}
