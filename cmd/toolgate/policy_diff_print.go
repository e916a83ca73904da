package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/clip"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/render"
)

// printDiff writes policy diff's report for a person: the rule changes,
// then what the replay found, each change's calls up to limit (0: all).
func printDiff(w io.Writer, d diffJSON, limit int) error {
	fmt.Fprintf(w, "%s (version %d, sha256 %.12s) -> %s (version %d, sha256 %.12s)\n",
		d.Old.File, d.Old.Version, d.Old.SHA256, d.New.File, d.New.Version, d.New.SHA256)
	if len(d.Changes) == 0 {
		fmt.Fprintln(w, "\nrules: the same")
	} else {
		fmt.Fprintln(w, "\nrules:")
	}
	for _, c := range d.Changes {
		printChange(w, c)
	}
	if d.History != nil {
		printHistory(w, *d.History, limit)
	}
	return nil
}

// changeName names what a change is about: a rule, the default, a schema.
func changeName(c policy.RuleChange) string {
	switch c.Kind {
	case policy.ChangeDefault:
		return "the default"
	case policy.ChangeSchema:
		return "the schema of " + c.Tool
	case policy.ChangePaths:
		return "the path list " + c.List
	}
	return "rule " + c.RuleID
}

var changeMarks = map[string]string{policy.ChangeAdded: "+", policy.ChangeRemoved: "-", policy.ChangeModified: "~",
	policy.ChangePrecedence: "^", policy.ChangeDefault: "~", policy.ChangeSchema: "~", policy.ChangePaths: "~"}

func printChange(w io.Writer, c policy.RuleChange) {
	impact := string(c.Impact)
	if c.Impact.CanLoosen() {
		impact = strings.ToUpper(impact)
	}
	head := changeName(c)
	switch {
	case c.Kind == policy.ChangeDefault:
		head += fmt.Sprintf(": %s -> %s", c.From, c.To)
	case c.Kind == policy.ChangeSchema:
		head += " " + strings.Join(c.Fields, "")
	case c.Kind == policy.ChangePaths:
		head += " " + strings.Join(c.Fields, " ")
	case c.New != nil:
		head += fmt.Sprintf(" (%s %s)", c.New.Effect, c.New.Tool)
	case c.Old != nil:
		head += fmt.Sprintf(" (%s %s)", c.Old.Effect, c.Old.Tool)
	}
	fmt.Fprintf(w, "  %s %s  %s\n", changeMarks[c.Kind], head, impact)
	if c.Kind == policy.ChangeModified {
		for _, f := range c.Fields {
			fmt.Fprintf(w, "      %s: %s -> %s\n", f, fieldValue(*c.Old, f), fieldValue(*c.New, f))
		}
	}
	fmt.Fprintf(w, "      %s\n", c.Why)
}

// fieldValue is one field of a rule as compact JSON ("-" when absent).
func fieldValue(r policy.RuleDoc, field string) string {
	var v any
	switch {
	case strings.HasPrefix(field, "input."):
		c, ok := r.Input[strings.TrimPrefix(field, "input.")]
		if !ok {
			return "-"
		}
		v = c
	default:
		v = map[string]any{"effect": r.Effect, "tool": r.Tool, "reason_code": r.ReasonCode, "message": r.Message,
			"approval_timeout": r.ApprovalTimeout, "description": r.Description}[field]
		if v == "" {
			return "-"
		}
	}
	data, _ := json.Marshal(v)
	return clip.String(string(data), 100)
}

func printHistory(w io.Writer, h historyJSON, limit int) {
	fmt.Fprintf(w, "\nhistory: %d calls replayed from %s%s: %d change effect (%d loosen, %d tighten); %d keep it under another rule or reason_code\n",
		h.Calls, sourceName(h), window(h), h.Changed, h.Loosened, h.Tightened, h.OtherRule)
	if h.WithoutSession > 0 {
		fmt.Fprintf(w, "  %d calls were replayed without their session (not in the source): the policies' own schemas, no working directory\n", h.WithoutSession)
	}
	for _, g := range h.Changes {
		mark := ""
		if g.Loosens {
			mark = "  LOOSENS"
		}
		fmt.Fprintf(w, "  %s -> %s  %s%s\n", g.From, g.To, plural(g.Count, "call"), mark)
		for _, rc := range g.Rules {
			fmt.Fprintf(w, "      %s: %d\n", rc, rc.Count)
		}
		shown := g.Calls
		if limit > 0 && len(shown) > limit {
			shown = shown[:limit]
		}
		for _, c := range shown {
			fmt.Fprintf(w, "      %s  %s  %s  %s\n", c.ProposedAt.Local().Format("2006-01-02 15:04:05"), c.ToolUseID, c.ToolName,
				render.Summary(c.ToolName, c.Input, 60))
		}
		if more := len(g.Calls) - len(shown); more > 0 {
			fmt.Fprintf(w, "      ... and %d more (--limit 0 lists them all)\n", more)
		}
	}
}

func sourceName(h historyJSON) string {
	switch h.Source {
	case "file":
		return "the export " + h.Path
	case "ledger":
		return "the ledger " + h.Path
	}
	return "the daemon's ledger"
}

func window(h historyJSON) string {
	format := func(t *time.Time, none string) string {
		if t == nil {
			return none
		}
		return t.Local().Format("2006-01-02 15:04:05")
	}
	if h.Since == nil && h.Until == nil {
		return ""
	}
	return fmt.Sprintf(" (proposed from %s to %s)", format(h.Since, "the first"), format(h.Until, "now"))
}

// plural is "1 call", "2 calls".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
