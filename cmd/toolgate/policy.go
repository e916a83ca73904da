package main

import (
	"fmt"
	"os"

	"github.com/toolgate/toolgate/policy"
	"github.com/urfave/cli/v2"
)

func policyCommand() *cli.Command {
	return &cli.Command{
		Name:  "policy",
		Usage: "check, try, explain and compare policy documents",
		Description: `A policy decides allow, ask or deny for every tool call: deny rules first, then
ask, then allow; within one effect the earlier rule wins; otherwise the default.

EXAMPLES
   toolgate policy check policy.json
   toolgate policy test policy.json --call '{"name":"Bash","input":{"command":"git push"}}'
   toolgate policy explain policy.json --call - < call.json
   toolgate policy export-settings policy.json > permissions.json
   toolgate policy diff main.json pr.json --history
   toolgate policy schema > policy.schema.json

EXIT STATUS
   0    help shown (each subcommand's --help lists its own codes)
   64   no such subcommand`,
		Subcommands: []*cli.Command{
			policyInitCommand(),
			policyCheckCommand(),
			policyTestCommand(),
			policyExplainCommand(),
			policyExportCommand(),
			policySchemaCommand(),
			policyDiffCommand(),
		},
		Action: helpOrUnknown,
	}
}

// policyFileFlag is the policy file argument's environment fallback.
const policyEnv = "TOOLGATE_POLICY"

// policyFile returns the policy file named as the first argument or, when
// there is none, by TOOLGATE_POLICY.
func policyFile(cliCtx *cli.Context) (string, error) {
	switch n := cliCtx.NArg(); {
	case n == 1:
		return cliCtx.Args().First(), nil
	case n > 1:
		return "", usagef("%s takes one policy file, got %d arguments", cliCtx.Command.Name, n)
	}
	if f := os.Getenv(policyEnv); f != "" {
		return f, nil
	}
	return "", usagef("%s needs a policy file (or %s)", cliCtx.Command.Name, policyEnv)
}

// loadPolicy loads a policy file for a command that uses it.
func loadPolicy(path string) (*policy.Policy, error) {
	p, err := policy.Load(path)
	if err != nil && !policy.IsInvalid(err) {
		return nil, fmt.Errorf("%w\nTry: check the path, or set %s", err, policyEnv)
	}
	return p, err
}
