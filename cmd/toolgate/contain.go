package main

import (
	"os"

	"github.com/toolgate/toolgate/contain"
	"github.com/urfave/cli/v2"
)

// containCommand is how toolgate run starts a contained claude: it enters
// the session's Landlock domain, then becomes claude. It is not for people.
func containCommand() *cli.Command {
	return &cli.Command{
		Name:      contain.Command,
		Hidden:    true,
		Usage:     "start a command contained (toolgate run uses it)",
		ArgsUsage: "--parent PID -- COMMAND [ARGS]",
		Description: `Enters a Landlock domain that scopes signals and abstract Unix sockets, then
executes COMMAND in it. toolgate run starts claude this way.

EXIT STATUS
   69   the domain could not be entered, or the parent is gone (the command never started)
   N    the command's own, once it runs`,
		Flags: []cli.Flag{&cli.IntFlag{Name: "parent", Usage: "the pid of the toolgate run this belongs to", Required: true}},
		Action: func(cliCtx *cli.Context) error {
			err := contain.Contain(cliCtx.Args().Slice(), os.Environ(), cliCtx.Int("parent"))
			return &gateUnavailable{err}
		},
	}
}
