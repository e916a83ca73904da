package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/toolgate/toolgate/client"
	"github.com/urfave/cli/v2"
)

func auditExportCommand() *cli.Command {
	return &cli.Command{
		Name:  "export",
		Usage: "write the audit chain as JSON lines",
		Description: `Writes every event of the chain, in order, one JSON object a line, exactly as
hashed: {"seq","time","kind","subject","data","prev_hash","hash"}; a chain
pruned (audit prune) starts after its base, and the last line says so. The daemon
reads the ledger, so this works while sessions run; --ledger names a ledger no
daemon serves (a private daemon is started for it). The file can be checked
later with toolgate audit verify --file.

EXAMPLES
   toolgate audit export > audit.jsonl
   toolgate audit export --output audit.jsonl

EXIT STATUS
   0    written
   64   bad command line
   66   no ledger there
   73   the output (-o) cannot be created
   69   the daemon cannot be reached or started, or another process holds the ledger (EX_UNAVAILABLE)`,
		Flags: []cli.Flag{ledgerFlag(), &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to FILE instead of standard output"}},
		Action: func(cliCtx *cli.Context) error {
			ledgerDir := ""
			if cliCtx.IsSet("ledger") {
				ledgerDir = cliCtx.String("ledger")
			}
			return runAuditExport(cliCtx.Context, cliCtx.App.Writer, ledgerDir, cliCtx.String("output"))
		},
	}
}

func runAuditExport(ctx context.Context, w io.Writer, ledgerDir, output string) error {
	if output != "" {
		f, err := os.OpenFile(output, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return &cantCreateError{fmt.Errorf("%w\nTry: -o FILE in a directory you can write", err)}
		}
		defer f.Close()
		w = f
	}
	return withAuditor(ctx, ledgerDir, func(c *client.Client) error { return c.ExportAudit(ctx, w) })
}
