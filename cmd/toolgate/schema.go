package main

import (
	"fmt"
	"io"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/policy"
	"github.com/urfave/cli/v2"
)

// schemaUsage says what each schema describes, in the order they are listed.
var schemaUsage = []struct{ name, usage string }{
	{"policy", "the policy document (the same as toolgate policy schema)"},
	{api.SchemaApproval, "the approval record an ask becomes: the JSON approval flow's schema, verbatim"},
	{api.SchemaDecision, "a decision on an approval record: the approval flow's fields, and actor_pid, actor_exe, note"},
	{api.SchemaWriteBack, "what the gate answered Claude Code for a call, as recorded"},
	{api.SchemaPermissionResult, "what the permission_prompt tool answers Claude Code"},
}

func schemaCommand() *cli.Command {
	return &cli.Command{
		Name:      "schema",
		Usage:     "print the JSON Schema of a document toolgate reads or writes",
		ArgsUsage: "[NAME]",
		Description: `Prints the JSON Schema (draft 2020-12) of one of toolgate's documents. Each
describes exactly what toolgate emits (additionalProperties is false), and the
test suite validates what pending --json, show --json, audit export and the
prompt tool put out against them. Without NAME it lists the names:

   policy              the policy document (also: toolgate policy schema)
   approval            the approval record: the approval flow's schema, verbatim
   decision            a decision on an approval record
   write-back          what the gate answered Claude Code for a call
   permission-result   what the permission_prompt tool answers Claude Code

EXAMPLES
   toolgate schema
   toolgate schema approval > approval.schema.json
   toolgate show --json apr_01J... | jq .decision   # valid by: toolgate schema decision

EXIT STATUS
   0    printed
   64   no schema of that name, or more than one name`,
		Action: func(cliCtx *cli.Context) error {
			switch cliCtx.NArg() {
			case 0:
				return listSchemas(cliCtx.App.Writer)
			case 1:
				return printSchema(cliCtx.App.Writer, cliCtx.Args().First())
			}
			return usagef("schema takes one NAME (toolgate schema lists them)")
		},
	}
}

func listSchemas(w io.Writer) error {
	for _, s := range schemaUsage {
		fmt.Fprintf(w, "%-19s %s\n", s.name, s.usage)
	}
	return nil
}

func printSchema(w io.Writer, name string) error {
	if name == "policy" {
		_, err := w.Write(policy.DocumentSchema())
		return err
	}
	s, ok := api.Schema(name)
	if !ok {
		return usagef("no schema %q (toolgate schema lists them)", name)
	}
	_, err := w.Write(s)
	return err
}
