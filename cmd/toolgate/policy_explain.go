package main

import (
	"fmt"
	"io"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/clip"
	"github.com/urfave/cli/v2"
)

func policyExplainCommand() *cli.Command {
	return &cli.Command{
		Name:      "explain",
		Usage:     "show every rule in evaluation order and why it matched or missed",
		ArgsUsage: "FILE --call JSON",
		Description: `For a person debugging a policy: the schema check, then every rule in the order
the engine evaluates them (the guard's built-in denies, then the policy's deny
rules, then ask, then allow, each in file order), whether it matched, and why:
the verdict a live session would get.

EXAMPLES
   toolgate policy explain examples/policies/protected-branch.json \
     --call '{"name":"mcp__github__create_pull_request","input":{"base":"main"}}'

EXIT STATUS
   0    explained
   64   bad command line
   65   the call is not a tool call
   66   the policy file cannot be read
   78   the policy is invalid`,
		Flags: callFlags(),
		Action: func(cliCtx *cli.Context) error {
			opts, err := newCallOptions(cliCtx)
			if err != nil {
				return err
			}
			return runPolicyExplain(cliCtx.App.Writer, opts, cliCtx.Bool("json"))
		},
	}
}

// explainJSON is the --json output of policy explain.
type explainJSON struct {
	decisionJSON
	Rules []ruleTraceJSON `json:"rules"`
}

type ruleTraceJSON struct {
	RuleID  string `json:"rule_id"`
	Effect  string `json:"effect"`
	Matched bool   `json:"matched"`
	Why     string `json:"why"`
}

func runPolicyExplain(w io.Writer, opts callOptions, asJSON bool) error {
	p, err := loadPolicy(opts.policyPath)
	if err != nil {
		return err
	}
	out := explainJSON{decisionJSON: decide(p, opts), Rules: []ruleTraceJSON{}}
	_, traces := opts.session(p).Explain(opts.call.Name, opts.call.Input)
	for _, t := range traces {
		out.Rules = append(out.Rules, ruleTraceJSON{t.RuleID, string(t.Effect), t.Matched, t.Why})
	}
	if asJSON {
		return writeJSON(w, out)
	}
	fmt.Fprintf(w, "call: %s %s (cwd %s)\n", opts.call.Name, clip.String(string(opts.call.Input), 200), opts.cwd)
	if out.Source == "schema" {
		fmt.Fprintf(w, "schema: %s -> deny schema_invalid; rules are not consulted\n", out.SchemaError)
		return nil
	}
	fmt.Fprintln(w, "schema: no schema for this tool in the policy, or the input is valid")
	for i, t := range out.Rules {
		mark := "miss "
		if t.Matched {
			mark = "MATCH"
		}
		fmt.Fprintf(w, "%3d  %-5s  %s  %-24s %s\n", i+1, t.Effect, mark, t.RuleID, t.Why)
	}
	if out.RuleID == nil {
		fmt.Fprintf(w, "no rule matched: the default %s applies (reason_code %s)\n", out.Effect, api.ReasonDefault)
		return nil
	}
	fmt.Fprintf(w, "decision: %s by rule %q (reason_code %s)\n", out.Effect, *out.RuleID, out.ReasonCode)
	return nil
}
