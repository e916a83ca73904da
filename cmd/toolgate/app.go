package main

import (
	"errors"
	"flag"
	"io"

	"github.com/urfave/cli/v2"
)

// version and commit are set at build time with -ldflags "-X main.version=...
// -X main.commit=..." (scripts/demo, just build and the end-to-end tests set
// commit from git); without them, Go's own VCS stamp is used when there is one.
var (
	version = "dev"
	commit  = ""
)

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:    "toolgate",
		Usage:   "a permission gate for the Claude Code CLI",
		Version: version,
		Description: `toolgate records every tool call a Claude Code agent proposes, checks it against
a versioned policy and the tool's JSON Schema, and allows, denies or asks a person.

EXAMPLES
   toolgate policy check examples/policies/*.json
   toolgate policy test examples/policies/protected-branch.json --call '{"name":"Read","input":{"file_path":".env"}}'

` + exitStatusHelp,
		Reader:    stdin,
		Writer:    stdout,
		ErrWriter: stderr,
		Commands: []*cli.Command{
			runCommand(),
			resumeCommand(),
			pendingCommand(),
			watchCommand(),
			notifyCommand(),
			showCommand(),
			decideCommand("approve", "approve a pending ask"),
			decideCommand("deny", "deny a pending ask"),
			serveCommand(),
			daemonCommand(),
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
			versionCommand(),
			completionCommand(),
			helpCommand(),
		},
		// Errors become exit codes in exitCode only; urfave must never exit.
		ExitErrHandler:       func(*cli.Context, error) {},
		EnableBashCompletion: true, // toolgate completion's scripts ask the binary
		HideHelpCommand:      true, // ours is helpCommand: it knows subcommands too

		Action: helpOrUnknown,
	}
	cli.VersionPrinter = func(cliCtx *cli.Context) { printVersion(cliCtx.App.Writer) }
	for _, c := range app.Commands {
		setUsageErrors(c)
	}
	app.OnUsageError = func(cliCtx *cli.Context, err error, _ bool) error {
		if errors.Is(err, flag.ErrHelp) { // toolgate --help, -h: the help, exit 0
			return cli.ShowAppHelp(cliCtx)
		}
		return flagError("toolgate", []cli.Flag{cli.HelpFlag, cli.VersionFlag}, err)
	}
	return app
}
