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
   toolgate pending --fleet "postgres://alice@db.internal/toolgate?sslmode=verify-full"

With --fleet (or TOOLGATE_FLEET) it lists every host's pending asks from the
fleet's PostgreSQL, each with its host.

EXIT STATUS
   0    listed (nothing when nothing waits)
   64   bad command line
   69   no daemon is running (it starts none: with none, no ask waits)`,
		Flags: []cli.Flag{jsonFlag(), fleetFlag("list the fleet's pending asks, every host's, from its PostgreSQL (a DSN)")},
		Action: func(cliCtx *cli.Context) error {
			if dsn := cliCtx.String("fleet"); dsn != "" {
				return fleetPending(cliCtx, dsn)
			}
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
