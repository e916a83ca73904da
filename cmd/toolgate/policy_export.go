package main

import (
	"fmt"
	"io"

	"github.com/toolgate/toolgate/policy"
	"github.com/urfave/cli/v2"
)

func policyExportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export-settings",
		Usage:     "project a policy into Claude Code's permission rules",
		ArgsUsage: "FILE",
		Description: `Prints {"permissions": {"allow": [...], "ask": [...], "deny": [...]}} with every
rule that Claude Code's permission strings can express exactly, such as
Read(./.env), Bash(git push *) or mcp__docs__search. Rules that cannot be
projected are listed on standard error with the reason; they are left out,
never widened. The policy stays the source of truth: this is a projection.

Claude Code reads permissions from its settings files (.claude/settings.json,
.claude/settings.local.json, ~/.claude/settings.json), not from a file of
their own: merge the output into one of them, as the second example does.

EXAMPLES
   toolgate policy export-settings policy.json
   toolgate policy export-settings policy.json > /tmp/perms.json &&
     jq -s '.[0] * .[1]' .claude/settings.local.json /tmp/perms.json > /tmp/merged.json &&
     mv /tmp/merged.json .claude/settings.local.json
   toolgate policy export-settings --json policy.json | jq .unprojected

EXIT STATUS
   0    printed
   64   bad command line
   66   the policy file cannot be read
   78   the policy is invalid`,
		Flags: []cli.Flag{jsonFlag()},
		Action: func(cliCtx *cli.Context) error {
			path, err := policyFile(cliCtx)
			if err != nil {
				return err
			}
			return runPolicyExport(cliCtx.App.Writer, cliCtx.App.ErrWriter, path, cliCtx.Bool("json"))
		},
	}
}

type exportJSON struct {
	SchemaVersion int                  `json:"schema_version"`
	Settings      settingsJSON         `json:"settings"`
	Unprojected   []policy.Unprojected `json:"unprojected"`
}

type settingsJSON struct {
	Permissions policy.Permissions `json:"permissions"`
}

func runPolicyExport(stdout, stderr io.Writer, path string, asJSON bool) error {
	p, err := loadPolicy(path)
	if err != nil {
		return err
	}
	perms, skipped := p.Permissions()
	if asJSON {
		return writeJSON(stdout, exportJSON{SchemaVersion: 1, Settings: settingsJSON{perms}, Unprojected: skipped})
	}
	for _, s := range skipped {
		if s.RuleID == "" {
			fmt.Fprintf(stderr, "note: %s\n", s.Reason)
			continue
		}
		fmt.Fprintf(stderr, "not projected: rule %q: %s\n", s.RuleID, s.Reason)
	}
	return writeJSON(stdout, settingsJSON{perms})
}
