package ledger

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
)

// Every string of a proposal, any of its times a clock can give (years 1
// to 9999, any nanosecond), and inputs the model writes to confuse the
// cut (the field itself, in keys and values, escaped or not; HTML
// characters; invalid UTF-8; deep nesting): the spliced encoding is
// json.Marshal's.
func FuzzReviewProposal(f *testing.F) {
	seeds := []string{
		`{"proposed_at":"0001-01-01T00:00:00Z"}`,
		`{"x":"\"proposed_at\":\"0001-01-01T00:00:00Z\",\"executed\":false,\"executions\":0}"}`,
		`{"\u0070roposed_at":"0001-01-01T00:00:00Z"}`,
		"{\"a\":\"\xff\xfe<>&\u2028\"}",
		`[[[[[[[[[[{"proposed_at":"0001-01-01T00:00:00Z"}]]]]]]]]]]`,
		`{"a":1e400}`,
		`  {"a" : -0.0e-0 }  `,
	}
	for _, s := range seeds {
		f.Add(s, "toolu_\"proposed_at\":\"0001-01-01T00:00:00Z\"", "s\xff", "agent<&>", "Bash\u2028", "/tmp/\"proposed_at\":\"0001-01-01T00:00:00Z\"", int64(63_000_000_000), int64(123))
	}
	f.Fuzz(func(t *testing.T, input, id, session, agent, tool, cwd string, sec, nsec int64) {
		if !json.Valid([]byte(input)) {
			return
		}
		// Seconds from year 1 to 9999, as time.Unix counts them.
		const first, last = -62135596800, 253402300799
		span := int64(last - first + 1)
		sec = first + ((sec%span)+span)%span
		at := time.Unix(sec, ((nsec%1e9)+1e9)%1e9).UTC()
		c := api.Call{ToolUseID: id, SessionID: session, AgentID: agent, ToolName: tool, Input: json.RawMessage(input), Cwd: cwd}
		checkProposal(t, c, at)
		// Fields a proposal must not carry, set on what is proposed.
		c.Verdict = api.Verdict{Effect: api.EffectAllow, RuleID: "r", DecidedAt: &at}
		c.Executed, c.Executions, c.ProposedAt = true, 3, at
		checkProposal(t, c, at)
	})
}
