package main

import (
	"io"

	"github.com/urfave/cli/v2"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:    "toolgate",
		Usage:   "a permission gate for the Claude Code CLI",
		Version: version,
		Description: `toolgate records every tool call a Claude Code agent proposes, checks it against
a versioned policy and the tool's JSON Schema, and allows, denies or asks a person.

EXAMPLES
   toolgate policy check examples/policies/*.json
   toolgate policy test examples/policies/seed.json --call '{"name":"Read","input":{"file_path":".env"}}'

` + exitStatusHelp,
		Reader:    stdin,
		Writer:    stdout,
		ErrWriter: stderr,
		Commands: []*cli.Command{
			runCommand(),
			pendingCommand(),
			watchCommand(),
			notifyCommand(),
			showCommand(),
			decideCommand("approve", "approve a pending ask"),
			decideCommand("deny", "deny a pending ask"),
			serveCommand(),
			fleetCommand(),
			webCommand(),
			auditCommand(),
			policyCommand(),
			schemaCommand(),
			installCommand(),
			uninstallCommand(),
			demoCommand(),
			doctorCommand(),
			demoMCPCommand(),
			containCommand(),
		},
		// Errors become exit codes in exitCode only; urfave must never exit.
		ExitErrHandler:       func(*cli.Context, error) {},
		EnableBashCompletion: false,
		HideHelpCommand:      true,
		Action:               helpOrUnknown,
	}
	for _, c := range app.Commands {
		setUsageErrors(c)
	}
	app.OnUsageError = onUsageError
	return app
}

func onUsageError(_ *cli.Context, err error, _ bool) error { return &usageError{err.Error()} }

func setUsageErrors(c *cli.Command) {
	c.OnUsageError = onUsageError
	for _, sub := range c.Subcommands {
		setUsageErrors(sub)
	}
}

// helpOrUnknown is the action of the app and of every command group: with
// no arguments it shows help, with an unknown command it is a usage error.
func helpOrUnknown(cliCtx *cli.Context) error {
	if cliCtx.Args().Present() {
		return usagef("unknown command %q", cliCtx.Args().First())
	}
	if cliCtx.Command != nil && cliCtx.Command.Name != "" {
		return cli.ShowSubcommandHelp(cliCtx)
	}
	return cli.ShowAppHelp(cliCtx)
}
