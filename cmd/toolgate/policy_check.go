package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/toolgate/toolgate/policy"
	"github.com/urfave/cli/v2"
)

func policyCheckCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "validate policy documents and run their inline tests",
		ArgsUsage: "[FILE...]",
		Description: `Loads each file (the default policy when none is given) strictly (JSON syntax, the policy JSON Schema, rule ids, regular
expressions, tool schemas) and runs its inline tests. Quiet when every file is
valid; otherwise every problem is listed as FILE:LINE:COL: rule "ID": what.
What is valid but cannot do what it seems to say (a command prefix that can
never match) is listed the same way as a warning; warnings alone exit 0.

EXAMPLES
   toolgate policy check
   toolgate policy check examples/policies/*.json
   toolgate policy check --json policy.json | jq '.files[].errors'

EXIT STATUS
   0    every file is valid
   64   bad command line
   66   a file cannot be read
   78   at least one file is invalid`,
		Flags: []cli.Flag{jsonFlag()},
		Action: func(cliCtx *cli.Context) error {
			files := cliCtx.Args().Slice()
			if len(files) == 0 {
				files = []string{cmp.Or(os.Getenv(policyEnv), defaultPolicy())}
			}
			return runPolicyCheck(cliCtx.App.Writer, cliCtx.App.ErrWriter, files, cliCtx.Bool("json"))
		},
	}
}

// checkReport is the --json output of policy check. Its schema_version:
// 1 (2026-11-29); 2 (2026-12-03): an invalid file has no rules and tests
// counts (they read 0), only its errors.
type checkReport struct {
	SchemaVersion int         `json:"schema_version"`
	Valid         bool        `json:"valid"`
	Files         []checkFile `json:"files"`
}

type checkFile struct {
	File    string       `json:"file"`
	Valid   bool         `json:"valid"`
	Version int          `json:"version,omitempty"`
	SHA256  string       `json:"sha256,omitempty"`
	Rules   *int         `json:"rules,omitempty"` // a valid file's
	Tests   *int         `json:"tests,omitempty"`
	Errors  []checkError `json:"errors"`
	// Warnings: valid, but a rule cannot do what it seems to say.
	Warnings []checkError `json:"warnings"`
}

type checkError struct {
	Line    int    `json:"line,omitempty"`
	Col     int    `json:"col,omitempty"`
	RuleID  string `json:"rule_id,omitempty"`
	Message string `json:"message"`
}

func runPolicyCheck(stdout, stderr io.Writer, files []string, asJSON bool) error {
	report := checkReport{SchemaVersion: 2, Valid: true}
	var unreadable error
	for _, f := range files {
		cf := checkFile{File: f, Errors: []checkError{}, Warnings: []checkError{}}
		p, err := policy.Load(f)
		var errs policy.LoadErrors
		switch {
		case err == nil:
			cf.Valid, cf.Version, cf.SHA256 = true, p.Version, p.SHA256
			rules, tests := len(p.Rules()), len(p.Document().Tests)
			cf.Rules, cf.Tests = &rules, &tests
			for _, w := range p.Warnings() {
				cf.Warnings = append(cf.Warnings, checkError{w.Line, w.Col, w.RuleID, w.Msg})
				if !asJSON {
					fmt.Fprintln(stderr, w.Warning())
				}
			}
		case errors.As(err, &errs):
			for _, e := range errs {
				cf.Errors = append(cf.Errors, checkError{e.Line, e.Col, e.RuleID, e.Msg})
				if !asJSON {
					fmt.Fprintln(stderr, e)
				}
			}
		default:
			unreadable = err
			cf.Errors = append(cf.Errors, checkError{Message: err.Error()})
			if !asJSON {
				fmt.Fprintf(stderr, "%s: %v\n", f, err)
			}
		}
		report.Valid = report.Valid && cf.Valid
		report.Files = append(report.Files, cf)
	}
	if asJSON {
		if err := writeJSON(stdout, report); err != nil {
			return err
		}
	}
	switch {
	case unreadable != nil:
		return &exitStatus{exitNoInput}
	case !report.Valid:
		return &exitStatus{exitConfig}
	}
	return nil
}

func jsonFlag() cli.Flag {
	return &cli.BoolFlag{Name: "json", Usage: "print machine-readable JSON (with a schema_version field)"}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
