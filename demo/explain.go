package demo

import (
	"fmt"
	"io"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/supervisor"
)

// explain prints the session's audit, one sentence per call, and reports
// whether every call came out as the demo means it to.
func explain(w io.Writer, rep supervisor.Report, res Result, id ids) bool {
	fmt.Fprintf(w, "\nThe audit of session %s (toolgate audit --session %s):\n", rep.SessionID, rep.SessionID)
	got := map[string]api.Call{}
	for _, c := range res.Calls {
		got[c.ToolUseID] = c
		fmt.Fprintf(w, "  %-31s %-31s %-5s %-20s %s\n", c.ToolUseID, c.ToolName, c.Effect, reasonOrRule(c), ran(c))
		fmt.Fprintf(w, "      %s\n", sentence(c))
	}
	fmt.Fprintf(w, "\ntoolgate run exited %d: %s\n", res.RunExit, exitMeaning(res.RunExit))
	ok := got[id.allow].Effect == api.EffectAllow && got[id.allow].Executed &&
		got[id.env].ReasonCode == "secret_file" && !got[id.env].Executed &&
		got[id.pr].ReasonCode == api.ReasonSchemaInvalid && !got[id.pr].Executed &&
		(got[id.ask].Source == api.SourcePerson || got[id.ask].Source == api.SourceExpiry)
	if !ok {
		fmt.Fprintln(w, "toolgate demo: something did not go as the demo expects; the audit above says what happened.")
	}
	return ok
}

func reasonOrRule(c api.Call) string {
	if c.ReasonCode != "" {
		return c.ReasonCode
	}
	return "rule " + c.RuleID
}

func ran(c api.Call) string {
	if c.Executed {
		return "ran once"
	}
	return "did not run"
}

// sentence says in one sentence what happened to a call.
func sentence(c api.Call) string {
	switch {
	case c.Source == api.SourcePerson && c.Effect == api.EffectAllow:
		return fmt.Sprintf("Rule %s asked a person; %s approved it, and only then did it run.", c.RuleID, c.Actor)
	case c.Source == api.SourcePerson:
		return fmt.Sprintf("Rule %s asked a person; %s denied it, so it never ran.", c.RuleID, c.Actor)
	case c.Source == api.SourceExpiry:
		return "Rule " + c.RuleID + " asked a person, nobody answered in time, and the expiry denied it (exit 75 tells a cron job to retry)."
	case c.ReasonCode == api.ReasonSchemaInvalid:
		return "Its input broke the tool's JSON Schema (base must be a string, head is required), so the MCP server was never called."
	case c.Effect == api.EffectDeny && c.RuleID != "":
		return fmt.Sprintf("Rule %s denied it before Claude Code could run it; the model was told the rule and reason_code, and not to retry.", c.RuleID)
	case c.Effect == api.EffectDeny:
		return "The policy's default denied it."
	case c.Effect == api.EffectAllow:
		return fmt.Sprintf("Rule %s allowed it; it was recorded before it ran, and ran exactly once.", c.RuleID)
	}
	return "It was proposed and never decided."
}

func exitMeaning(code int) string {
	switch code {
	case 0:
		return "claude succeeded and nothing was denied."
	case 75:
		return "an approval expired (a timeout: retry later)."
	case 77:
		return "at least one call was denied, as the demo meant; a cron job can branch on it."
	}
	return "see toolgate run --help, EXIT STATUS."
}
