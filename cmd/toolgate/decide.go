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

` + decideExitStatus,
		Flags: []cli.Flag{&cli.StringFlag{Name: "reason", Usage: "your note, for the audit"}},
		Action: func(cliCtx *cli.Context) error {
			id, err := oneID(cliCtx)
			if err != nil {
				return err
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
