package main

import (
	"github.com/toolgate/toolgate/policy"
	"github.com/urfave/cli/v2"
)

func policySchemaCommand() *cli.Command {
	return &cli.Command{
		Name:  "schema",
		Usage: "print the JSON Schema of policy documents",
		Description: `Prints the JSON Schema (draft 2020-12) that every policy document is validated
against, for editors and other tools. toolgate schema prints the schemas of the
other documents (the approval record, the decision, the write-back).

EXAMPLES
   toolgate policy schema > policy.schema.json

EXIT STATUS
   0    printed
   64   bad command line`,
		Action: func(cliCtx *cli.Context) error {
			if cliCtx.NArg() > 0 {
				return usagef("policy schema takes no arguments")
			}
			_, err := cliCtx.App.Writer.Write(policy.DocumentSchema())
			return err
		},
	}
}
