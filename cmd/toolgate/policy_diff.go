package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/policy"
	"github.com/urfave/cli/v2"
)

func policyDiffCommand() *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "compare two policies, and replay the recorded calls through both",
		ArgsUsage: "OLD NEW",
		Description: `Compares two policy documents rule by rule (by id): the default, rules added,
removed and changed (which fields), rules of one effect whose order changed so
that another decides the calls both match, and tool input schemas. Each change
says what it can do to decisions: loosens (some call can get a looser effect:
deny to ask or allow, ask to allow), may_loosen (the documents cannot tell),
tightens, or neutral (only which rule decides, its reason_code or message).

--history replays every recorded call through both policies, each as the gate
decided it (the session's working directory and home, the input schemas and
requiresUserInteraction flags its MCP servers published), and lists each call
whose effect changes, grouped by change (ask -> allow ...), loosening first,
with counts per rule. The calls come from the daemon's ledger (the daemon reads
it; --ledger names a ledger no daemon serves), or from an audit export (--file);
--since and --until bound them by when they were proposed. A call whose session
is not in the source is replayed without its session (the policies' own schemas,
no working directory) and counted as such.

EXAMPLES
   toolgate policy diff main.json pr.json
   toolgate policy diff main.json pr.json --history --since 720h
   toolgate audit export -o audit.jsonl && toolgate policy diff main.json pr.json --file audit.jsonl --json
   # in CI: fail a policy pull request that loosens a decision
   toolgate policy diff <(git show origin/main:policy.json) policy.json --file audit.jsonl || exit 1

EXIT STATUS
   0    nothing loosens: no rule change can loosen a decision, or with --history,
        no recorded call gets a looser effect
   64   bad command line
   65   the export (--file) is not an audit export
   66   a file cannot be read, or there is no ledger there
   69   the daemon cannot be reached or started
   78   a policy is invalid
   80   the new policy loosens a decision: without --history, a rule change can
        (loosens or may_loosen); with it, a recorded call's effect does`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "history", Usage: "replay the recorded calls through both policies"},
			&cli.StringFlag{Name: "file", Usage: "replay the calls of an audit export (implies --history)"},
			&cli.StringFlag{Name: "ledger", Usage: "replay the calls of a ledger no daemon serves (implies --history)"},
			&cli.StringFlag{Name: "since", Usage: "only calls proposed at or after `TIME` (RFC 3339, a date, or a duration ago: 24h)"},
			&cli.StringFlag{Name: "until", Usage: "only calls proposed before `TIME`"},
			&cli.IntFlag{Name: "limit", Value: 10, Usage: "calls listed per change (0: all); --json lists all"},
			jsonFlag(),
		},
		Action: func(cliCtx *cli.Context) error {
			opts, err := newDiffOptions(cliCtx)
			if err != nil {
				return err
			}
			return runPolicyDiff(cliCtx.Context, cliCtx.App.Writer, opts)
		},
	}
}

// diffOptions is what policy diff compares, and where the calls come from.
type diffOptions struct {
	oldPath, newPath string
	history          bool
	file, ledger     string
	since, until     time.Time
	limit            int
	asJSON           bool
}

func newDiffOptions(cliCtx *cli.Context) (diffOptions, error) {
	if cliCtx.NArg() != 2 {
		return diffOptions{}, usagef("policy diff takes two policy files, OLD and NEW (got %d arguments)", cliCtx.NArg())
	}
	o := diffOptions{oldPath: cliCtx.Args().Get(0), newPath: cliCtx.Args().Get(1), file: cliCtx.String("file"),
		ledger: cliCtx.String("ledger"), limit: cliCtx.Int("limit"), asJSON: cliCtx.Bool("json")}
	var err error
	now := time.Now()
	if o.since, err = parseWhen(cliCtx.String("since"), now); err != nil {
		return o, usagef("--since: %v", err)
	}
	if o.until, err = parseWhen(cliCtx.String("until"), now); err != nil {
		return o, usagef("--until: %v", err)
	}
	switch {
	case o.file != "" && o.ledger != "":
		return o, usagef("--file and --ledger name two sources of calls: give one")
	case o.limit < 0:
		return o, usagef("--limit must be 0 (all) or more")
	}
	o.history = cliCtx.Bool("history") || o.file != "" || o.ledger != "" || !o.since.IsZero() || !o.until.IsZero()
	return o, nil
}

// parseWhen reads a time: RFC 3339, a date (midnight, local time), or a
// duration before now.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: want 2026-12-01T09:00:00Z, 2026-12-01 or a duration ago such as 24h", s)
}

func runPolicyDiff(ctx context.Context, w io.Writer, o diffOptions) error {
	oldP, err := loadPolicy(o.oldPath)
	if err != nil {
		return err
	}
	newP, err := loadPolicy(o.newPath)
	if err != nil {
		return err
	}
	out := diffJSON{SchemaVersion: 1, Old: infoOf(o.oldPath, oldP), New: infoOf(o.newPath, newP), Changes: policy.Diff(oldP, newP)}
	for _, c := range out.Changes {
		out.Loosens = out.Loosens || c.Impact.CanLoosen()
	}
	if o.history {
		h, err := replay(ctx, o, oldP, newP)
		if err != nil {
			return err
		}
		out.History, out.Loosens = &h, h.Loosened > 0
	}
	if o.asJSON {
		err = writeJSON(w, out)
	} else {
		err = printDiff(w, out, o.limit)
	}
	if err == nil && out.Loosens {
		err = loosenedBy(out)
	}
	return err
}

// diffJSON is policy diff's report (--json).
type diffJSON struct {
	SchemaVersion int                 `json:"schema_version"`
	Old           policyInfo          `json:"old"`
	New           policyInfo          `json:"new"`
	Loosens       bool                `json:"loosens"` // why the exit status is 80
	Changes       []policy.RuleChange `json:"rule_changes"`
	History       *historyJSON        `json:"history,omitempty"`
}

type policyInfo struct {
	File    string     `json:"file"`
	Version int        `json:"version"`
	SHA256  string     `json:"sha256"`
	Default api.Effect `json:"default"`
}

func infoOf(file string, p *policy.Policy) policyInfo {
	return policyInfo{File: file, Version: p.Version, SHA256: p.SHA256, Default: p.Default}
}

// historyJSON is the replay's part of the report: where the calls came
// from, the window, and what the replay found.
type historyJSON struct {
	Source string     `json:"source"` // daemon, ledger or file
	Path   string     `json:"path,omitempty"`
	Since  *time.Time `json:"since,omitempty"`
	Until  *time.Time `json:"until,omitempty"`
	policy.HistoryReport
}

// replay feeds the recorded calls of the chosen source through both
// policies.
func replay(ctx context.Context, o diffOptions, oldP, newP *policy.Policy) (historyJSON, error) {
	h := historyJSON{Source: "daemon"}
	if !o.since.IsZero() {
		h.Since = &o.since
	}
	if !o.until.IsZero() {
		h.Until = &o.until
	}
	r := policy.NewReplayer(oldP, newP)
	feed := func(item api.HistoryItem) error {
		if item.Session != nil {
			r.AddSession(*item.Session)
		}
		if item.Call != nil {
			r.Replay(*item.Call)
		}
		return nil
	}
	var err error
	switch {
	case o.file != "":
		h.Source, h.Path = "file", o.file
		err = replayFile(o.file, o.since, o.until, feed)
	default:
		if o.ledger != "" {
			h.Source, h.Path = "ledger", o.ledger
		}
		err = withAuditor(ctx, o.ledger, func(c *client.Client) error { return c.History(ctx, o.since, o.until, feed) })
	}
	h.HistoryReport = r.Report()
	return h, err
}

func replayFile(path string, since, until time.Time, feed func(api.HistoryItem) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := ledger.ReadHistory(f, since, until, feed); err != nil {
		return &dataError{fmt.Errorf("%s: %w\nTry: toolgate audit export -o FILE makes one", path, err)}
	}
	return nil
}

// loosenedBy is the error (exit 80) of a diff that loosens a decision,
// saying in one line which.
func loosenedBy(d diffJSON) error {
	if d.History != nil {
		return &loosenedError{fmt.Sprintf("%s loosens the decision on %d of %d recorded calls", d.New.File,
			d.History.Loosened, d.History.Calls)}
	}
	var which []string
	for _, c := range d.Changes {
		if c.Impact.CanLoosen() {
			which = append(which, changeName(c)+" ("+string(c.Impact)+")")
		}
	}
	return &loosenedError{fmt.Sprintf("%s can loosen decisions: %s\nTry: --history, to see whether a recorded call's does",
		d.New.File, strings.Join(which, ", "))}
}
