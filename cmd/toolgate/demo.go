package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/toolgate/toolgate/claudecode"
	"github.com/toolgate/toolgate/demo"
	"github.com/urfave/cli/v2"
)

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "gate a real claude -p session on a built-in scripted model (no API key)",
		Description: `Runs the real Claude Code CLI under toolgate run in a scratch project, against a
scripted model on loopback, with a demo policy. The model proposes four calls:
an allowed command, a read of .env (denied), an MCP call whose input breaks the
tool's schema (denied schema_invalid) and a release that a rule asks a person
about: approve it from another terminal with toolgate approve, or let the demo
approve it itself (--auto-approve). Then it prints the session's audit and
explains each line. If Claude Code is not installed, the pinned version is
installed with npm into $XDG_CACHE_HOME/toolgate first.

EXAMPLES
   toolgate demo --auto-approve 5s
   toolgate demo            # and, in another terminal: toolgate pending; toolgate approve apr_...

EXIT STATUS
   0    the demo went as it should
   1    it did not: the audit it printed says what happened
   64   bad command line
   69   Claude Code is missing and could not be installed, or the gate could not start`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "auto-approve", Usage: "approve the ask after `DURATION` (0: wait for you)"},
			&cli.BoolFlag{Name: "keep", Usage: "keep the scratch project"},
			&cli.StringFlag{Name: "claude", Usage: "the claude executable (default: the pinned version, installed on demand)", EnvVars: []string{"TOOLGATE_CLAUDE"}},
		},
		Action: func(cliCtx *cli.Context) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(self), "toolgate-hook")); err != nil {
				return &gateUnavailable{errors.New("toolgate-hook is not beside toolgate\nTry: ./scripts/demo, or CGO_ENABLED=0 go build -o bin/ ./cmd/... && bin/toolgate demo")}
			}
			claude := cliCtx.String("claude")
			if claude == "" {
				if claude, err = demo.FindClaude(cliCtx.Context, claudecode.PinnedVersion, cliCtx.App.ErrWriter); err != nil {
					return &gateUnavailable{err}
				}
			} else if claude, err = exec.LookPath(claude); err != nil {
				return &gateUnavailable{err}
			}
			res, err := demo.Run(cliCtx.Context, demo.Config{Self: self, Claude: claude, Paths: livePaths(),
				AutoApprove: cliCtx.Duration("auto-approve"), Keep: cliCtx.Bool("keep"), Env: os.Environ(),
				Stdout: cliCtx.App.Writer, Stderr: cliCtx.App.ErrWriter})
			if err != nil {
				return err
			}
			if !res.AsExpected {
				return &exitStatus{exitFailure}
			}
			return nil
		},
	}
}

func demoMCPCommand() *cli.Command {
	return &cli.Command{
		Name:   "demo-mcp",
		Hidden: true,
		Usage:  "the demo's MCP server, on stdio",
		Action: func(*cli.Context) error { return demo.ServeMCP() },
	}
}
