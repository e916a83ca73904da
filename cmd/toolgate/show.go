package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/render"
	"github.com/urfave/cli/v2"
)

func showCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "show one approval: the record, the decision and the write-back",
		ArgsUsage: "ID",
		Description: `Shows an approval record, the decision on it and the write-back, the
three documents of the JSON approval flow: --json prints them as
{"schema_version", "approval", "reason_code", "decision", "write_back"}, each
as its schema describes it (toolgate schema approval, decision, write-back).
The decision says what becomes of the call: allow or deny (an expiry is a
deny, reason_code approval_expired), or ask when Claude Code's own dialog
decided (handed_to_claude); the record's status says approved, denied or
expired.

EXAMPLES
   toolgate show apr_01J...
   toolgate show --json apr_01J... | jq .decision
   toolgate show apr_01J... --fleet "$ALICE_DSN"

EXIT STATUS
   0    shown
   64   bad command line
   65   no approval with that id
   69   no daemon is running (it starts none; with --fleet: Postgres cannot be reached)`,
		Flags: []cli.Flag{jsonFlag(), fleetFlag("show an ask of the fleet's PostgreSQL (a DSN with an approver's or auditor's role)")},
		Action: func(cliCtx *cli.Context) error {
			id, err := oneID(cliCtx)
			if err != nil {
				return err
			}
			source, done, err := approverSource(cliCtx)
			if err != nil {
				return err
			}
			defer done()
			d, err := source.Approval(cliCtx.Context, id)
			if err != nil {
				return approverError(err)
			}
			if cliCtx.Bool("json") {
				return writeJSON(cliCtx.App.Writer, struct {
					SchemaVersion int `json:"schema_version"`
					api.ApprovalDetail
				}{1, d})
			}
			w := cliCtx.App.Writer
			printApproval(w, d)
			fmt.Fprintf(w, "    input: %s\n", render.Printable(strings.TrimSpace(string(d.Approval.Input))))
			for _, l := range render.All(d.Approval.ToolName, d.Approval.Input, 76) {
				fmt.Fprintf(w, "    %s\n", l)
			}
			printDecision(w, d)
			return nil
		},
	}
}

// printDecision shows what came of an approval: who decided, the
// decision (allow, deny or ask), and what was written back.
func printDecision(w io.Writer, d api.ApprovalDetail) {
	if dec := d.Decision; dec != nil {
		who := joinSet(" ", dec.Actor, parens(joinSet(", ", pidText(dec.ActorPID), dec.ActorExe)))
		fmt.Fprintf(w, "    %s by %s at %s: %s\n", d.Approval.Status, who, dec.DecidedAt.Local().Format(time.RFC3339),
			joinSet(", ", "decision "+string(dec.Decision), labelled("reason_code", dec.ReasonCode)))
		if dec.Note != "" {
			fmt.Fprintf(w, "    note: %s\n", dec.Note)
		}
	}
	if wb := d.WriteBack; wb != nil {
		what := "written back to claude"
		if !wb.WroteBack {
			what = "nothing written back: claude's own dialog decided"
		}
		fmt.Fprintf(w, "    %s: %s\n", what, joinSet(" ", string(wb.Effect), parens(labelled("reason_code", wb.ReasonCode))))
	}
}

// joinSet joins the parts that are set: an empty field never prints as
// "reason_code " or "(pid 0, )".
func joinSet(sep string, parts ...string) string {
	var set []string
	for _, p := range parts {
		if p != "" {
			set = append(set, p)
		}
	}
	return strings.Join(set, sep)
}

// parens is "(s)", or "" when s is.
func parens(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

// labelled is "name value", or "" when value is.
func labelled(name, value string) string {
	if value == "" {
		return ""
	}
	return name + " " + value
}

func pidText(pid int) string {
	if pid <= 0 {
		return ""
	}
	return fmt.Sprintf("pid %d", pid)
}
