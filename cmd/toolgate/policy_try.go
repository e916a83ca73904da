package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/policy"
	"github.com/urfave/cli/v2"
)

func policyTestCommand() *cli.Command {
	return &cli.Command{
		Name:      "test",
		Usage:     "decide one tool call with a policy",
		ArgsUsage: "FILE --call JSON",
		Description: `Prints the decision the policy makes for one call: the input is first checked
against the tool's schema from the policy's "schemas" (deny schema_invalid),
then the rules decide. The call is a tool_use block
{"type":"tool_use","id":"toolu_1","name":"Read","input":{...}}, the short
{"name":"Read","input":{...}}, or a Claude Code hook event; --call - reads it
from standard input. Relative paths in the input resolve against --cwd.

EXAMPLES
   toolgate policy test examples/policies/protected-branch.json \
     --call '{"type":"tool_use","id":"toolu_01","name":"mcp__github__create_pull_request","input":{"base":"main"}}'
   echo '{"name":"Bash","input":{"command":"git status && rm -rf /"}}' |
     toolgate policy test policy.json --call - --json

EXIT STATUS
   0    the call was decided (whatever the effect; read it from the output)
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
			return runPolicyTest(cliCtx.App.Writer, opts, cliCtx.Bool("json"))
		},
	}
}

func callFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "call", Usage: "the tool call as JSON, or - for standard input (required)"},
		&cli.StringFlag{Name: "cwd", Usage: "the session's working directory (default: the current one)"},
		jsonFlag(),
	}
}

// callOptions is a policy file and one call to decide with it.
type callOptions struct {
	policyPath string
	call       policy.CallDoc
	cwd, home  string
}

func newCallOptions(cliCtx *cli.Context) (callOptions, error) {
	var opts callOptions
	if !cliCtx.IsSet("call") {
		return opts, usagef("%s needs --call JSON", cliCtx.Command.Name)
	}
	path, err := policyFile(cliCtx)
	if err != nil {
		return opts, err
	}
	raw := []byte(cliCtx.String("call"))
	if cliCtx.String("call") == "-" {
		if raw, err = io.ReadAll(io.LimitReader(cliCtx.App.Reader, 16<<20)); err != nil {
			return opts, fmt.Errorf("read the call from standard input: %w", err)
		}
	}
	call, err := policy.ParseCall(raw)
	if err != nil {
		return opts, &dataError{err}
	}
	cwd := cliCtx.String("cwd")
	if cwd == "" {
		cwd = call.Cwd
	}
	if cwd == "" {
		if cwd, err = os.Getwd(); err != nil {
			return opts, fmt.Errorf("working directory: %w", err)
		}
	}
	home, _ := os.UserHomeDir()
	return callOptions{policyPath: path, call: call, cwd: cwd, home: home}, nil
}

// decisionJSON is the --json output of policy test: the verdict the gate
// would reach, as the ledger records it, with the policy that reached it.
// rule_id is null when the default decided.
type decisionJSON struct {
	SchemaVersion int    `json:"schema_version"`
	ToolUseID     string `json:"tool_use_id,omitempty"`
	ToolName      string `json:"tool_name"`
	api.Verdict
	RuleID        *string `json:"rule_id"`
	SchemaError   string  `json:"schema_error,omitempty"`
	SchemaPointer *string `json:"schema_pointer,omitempty"`
	PolicyVersion int     `json:"policy_version"`
	PolicySHA256  string  `json:"policy_sha256"`
}

func runPolicyTest(w io.Writer, opts callOptions, asJSON bool) error {
	p, err := loadPolicy(opts.policyPath)
	if err != nil {
		return err
	}
	out := decide(p, opts)
	if asJSON {
		return writeJSON(w, out)
	}
	by := "the default"
	if out.RuleID != nil {
		by = fmt.Sprintf("rule %q", *out.RuleID)
	}
	fmt.Fprintf(w, "%s by %s (reason_code %s; policy version %d, sha256 %.12s)\n",
		out.Effect, by, out.ReasonCode, out.PolicyVersion, out.PolicySHA256)
	if out.SchemaError != "" {
		fmt.Fprintf(w, "  %s\n", out.SchemaError)
	}
	if out.Message != "" {
		fmt.Fprintf(w, "  message: %s\n", out.Message)
	}
	return nil
}

// session is the session a live toolgate run of the policy would have for
// the call: its guard protects what a live session's protects (toolgate's
// paths as the running daemon serves them, its configuration and binaries,
// Claude Code's settings, the policy file), so that policy test and
// policy explain give the verdict the gate would.
func (o callOptions) session(p *policy.Policy) *policy.Session {
	s := policy.NewSession(p, nil, o.cwd, o.home)
	exe, _ := os.Executable()
	claude := os.Getenv("CLAUDE_CONFIG_DIR")
	if claude == "" && o.home != "" {
		claude = filepath.Join(o.home, ".claude")
	}
	s.Guard = policy.NewGuard(policy.GuardPaths{Gate: livePaths(), ConfigDir: configDir(), Exe: exe,
		ClaudeDir: claude, Project: o.cwd, Extra: []string{o.policyPath}})
	return s
}

// decide is the gate's own decision of the call (policy.Session.Evaluate,
// the guard included), with the schema's complaint spelled out when there
// is one.
func decide(p *policy.Policy, opts callOptions) decisionJSON {
	s := opts.session(p)
	v := s.Evaluate(opts.call.Name, opts.call.Input)
	out := decisionJSON{SchemaVersion: 1, ToolUseID: opts.call.ID, ToolName: opts.call.Name, Verdict: v,
		PolicyVersion: p.Version, PolicySHA256: p.SHA256}
	if v.RuleID != "" {
		out.RuleID = &v.RuleID
	}
	if v.Source == api.SourceSchema {
		out.SchemaError = "input is not a JSON object"
		if se := s.SchemaError(opts.call.Name, opts.call.Input); se != nil {
			out.SchemaError, out.SchemaPointer = se.Error(), &se.Pointer
		}
	}
	return out
}
