package main

import (
	"context"

	"github.com/toolgate/toolgate/api"
	"github.com/urfave/cli/v2"
)

func decideCommand(name, usage string) *cli.Command {
	return &cli.Command{
		Name:      name,
		Usage:     usage,
		ArgsUsage: "ID",
		Description: `Decides a pending approval. The daemon records who decided from your process's
identity (user, pid, executable); --reason is kept in the audit and never shown
to the model. Quiet on success.

EXAMPLES
   toolgate ` + name + ` apr_01J...
   toolgate ` + name + ` apr_01J... --reason "checked the diff"
   toolgate ` + name + ` apr_01J... --fleet "postgres://alice@db.internal/toolgate?sslmode=verify-full"

With --fleet (or TOOLGATE_FLEET) the fleet's PostgreSQL decides: exactly one
decision per ask wins, and it records your role and address as the actor. A
host in a fleet refuses decisions on its own socket: they go through Postgres.

` + decideExitStatus,
		Flags: []cli.Flag{&cli.StringFlag{Name: "reason", Usage: "your note, for the audit"},
			fleetFlag("decide through the fleet's PostgreSQL, with an approver's role (a DSN)")},
		Action: func(cliCtx *cli.Context) error {
			id, err := oneID(cliCtx)
			if err != nil {
				return err
			}
			if dsn := cliCtx.String("fleet"); dsn != "" {
				return fleetDecide(cliCtx.Context, dsn, id, name, cliCtx.String("reason"))
			}
			return runDecide(cliCtx.Context, id, name, cliCtx.String("reason"))
		},
	}
}

func runDecide(ctx context.Context, id, decision, reason string) error {
	_, err := approverClient().Decide(ctx, id, api.DecideRequest{Decision: decision, Reason: reason})
	if err != nil {
		return approverError(err)
	}
	return nil
}
