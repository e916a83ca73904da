package supervisor

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/spool"
)

func call(id, session string, v api.Verdict, executed bool) api.Call {
	return api.Call{ToolUseID: id, SessionID: session, ToolName: "Bash", Input: json.RawMessage(`{}`), Verdict: v, Executed: executed}
}

func verdict(effect api.Effect, reason, source string) api.Verdict {
	return api.Verdict{Effect: effect, ReasonCode: reason, Source: source}
}

func TestBuildReport(t *testing.T) {
	allow := verdict(api.EffectAllow, "", api.SourcePolicy)
	expired := verdict(api.EffectDeny, api.ReasonApprovalExpired, api.SourceExpiry)
	denied := verdict(api.EffectDeny, "secret_file", api.SourcePolicy)
	ask := verdict(api.EffectAsk, "default", api.SourcePolicy)
	spoolDeny := func(id string) spool.Line {
		return spool.Line{Event: api.PreToolUse, ToolUseID: id, ToolName: "Read", ReasonCode: api.ReasonGateUnavailable}
	}
	tests := []struct {
		name    string
		calls   []api.Call
		spooled []spool.Line
		claude  int
		// what comes out: each call as "id effect reason", then the counts
		// and the exit code
		want   []string
		counts string
		exit   int
	}{
		{name: "nothing", claude: 0, counts: "0 0 0 0 0 0 map[]", exit: 0},
		{name: "claude's own failure", claude: 3, calls: []api.Call{call("a", "s", allow, true)},
			want: []string{"a allow "}, counts: "1 1 0 0 0 1 map[]", exit: 3},
		{name: "a deny is 77", calls: []api.Call{call("a", "s", allow, true), call("b", "s", denied, false)},
			want: []string{"a allow ", "b deny secret_file"}, counts: "2 1 1 0 0 1 map[secret_file:1]", exit: 77},
		{name: "an expiry is 75, before any deny", calls: []api.Call{call("a", "s", denied, false), call("b", "s", expired, false)},
			want: []string{"a deny secret_file", "b deny approval_expired"}, counts: "2 0 1 1 0 0 map[secret_file:1]", exit: 75},
		{name: "an expiry alone is 75, whatever claude did", claude: 1, calls: []api.Call{call("a", "s", expired, false)},
			want: []string{"a deny approval_expired"}, counts: "1 0 0 1 0 0 map[]", exit: 75},
		{name: "an ask never answered is pending", calls: []api.Call{call("a", "s", ask, false)},
			want: []string{"a ask default"}, counts: "1 0 0 0 1 0 map[]", exit: 0},
		{name: "undecided, and denied by the hook while the daemon was away",
			calls: []api.Call{call("a", "s", api.Verdict{}, false)}, spooled: []spool.Line{spoolDeny("a")},
			want: []string{"a deny gate_unavailable"}, counts: "1 0 1 0 0 0 map[gate_unavailable:1]", exit: 77},
		{name: "denied by the hook, never seen by the daemon",
			calls: []api.Call{call("a", "s", allow, true)}, spooled: []spool.Line{spoolDeny("b"), {Event: api.PostToolUse, ToolUseID: "a"}},
			want: []string{"a allow ", "b deny gate_unavailable"}, counts: "2 1 1 0 0 1 map[gate_unavailable:1]", exit: 77},
		{name: "decided by the daemon after the hook's deadline: the deny Claude Code got stands",
			calls: []api.Call{call("a", "s", allow, false)}, spooled: []spool.Line{spoolDeny("a")},
			want: []string{"a deny gate_unavailable"}, counts: "1 0 1 0 0 0 map[gate_unavailable:1]", exit: 77},
		{name: "a call that ran keeps its verdict whatever the spool says",
			calls: []api.Call{call("a", "s", allow, true)}, spooled: []spool.Line{spoolDeny("a")},
			want: []string{"a allow "}, counts: "1 1 0 0 0 1 map[]", exit: 0},
		{name: "a repeat in this session is an entry of its own",
			calls: []api.Call{withRepeats(call("a", "s", allow, true), api.Repeat{SessionID: "s", Effect: api.EffectDeny, ReasonCode: api.ReasonDuplicateToolUseID})},
			want:  []string{"a allow ", "a deny duplicate_tool_use_id (repeat)"}, counts: "2 1 1 0 0 1 map[duplicate_tool_use_id:1]", exit: 77},
		{name: "another session's call counts only for its repeat here",
			calls: []api.Call{withRepeats(call("a", "other", allow, true),
				api.Repeat{SessionID: "s", Effect: api.EffectDeny, ReasonCode: api.ReasonDuplicateToolUseID},
				api.Repeat{SessionID: "third", Effect: api.EffectDeny, ReasonCode: api.ReasonDuplicateToolUseID})},
			want: []string{"a deny duplicate_tool_use_id (repeat)"}, counts: "1 0 1 0 0 0 map[duplicate_tool_use_id:1]", exit: 77},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := buildReport("s", tt.calls, tt.spooled)
			r.ClaudeExitCode = tt.claude
			var got []string
			for _, c := range r.Calls {
				line := fmt.Sprintf("%s %s %s", c.ToolUseID, c.Effect, c.ReasonCode)
				if c.Repeat {
					line += " (repeat)"
				}
				if c.SessionID != "s" {
					line += " in session " + c.SessionID
				}
				got = append(got, line)
			}
			sort.Strings(got)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("calls\n got %q\nwant %q", got, tt.want)
			}
			n := r.Counts
			if counts := fmt.Sprint(n.Calls, n.Allowed, n.Denied, n.Expired, n.Pending, n.Executed, n.ByReason); counts != tt.counts {
				t.Errorf("counts (calls allowed denied expired pending executed by-reason)\n got %s\nwant %s", counts, tt.counts)
			}
			if code := r.exitCode(); code != tt.exit {
				t.Errorf("exit %d, want %d", code, tt.exit)
			}
			if r.SchemaVersion != ReportSchemaVersion || r.Calls == nil {
				t.Errorf("schema_version %d, calls %v", r.SchemaVersion, r.Calls)
			}
		})
	}
}

func withRepeats(c api.Call, reps ...api.Repeat) api.Call {
	for i := range reps {
		reps[i].ProposedAt = time.Date(2026, 12, 1, 0, 0, i, 0, time.UTC)
	}
	c.Repeats = reps
	return c
}

// The summary and the report's counts agree: an expiry is counted once,
// as expired, never as a denial too.
func TestSummary(t *testing.T) {
	expired := verdict(api.EffectDeny, api.ReasonApprovalExpired, api.SourceExpiry)
	r := buildReport("s", []api.Call{call("a", "s", expired, false)}, nil)
	r.ExitCode = r.exitCode()
	want := "toolgate: 1 call: 0 allowed, 0 denied, 1 expired, 0 executed; claude exited 0; exit 75"
	if got := r.Summary(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if len(r.Counts.ByReason) != 0 || r.Counts.Denied != 0 || r.Counts.Expired != 1 {
		t.Errorf("counts %+v", r.Counts)
	}
	denied := verdict(api.EffectDeny, "secret_file", api.SourcePolicy)
	ask := verdict(api.EffectAsk, "default", api.SourcePolicy)
	r = buildReport("s", []api.Call{call("a", "s", expired, false), call("b", "s", denied, false), call("c", "s", ask, false)}, nil)
	r.ExitCode = r.exitCode()
	want = "toolgate: 3 calls: 0 allowed, 1 denied (secret_file 1), 1 expired, 1 never answered, 0 executed; claude exited 0; exit 75"
	if got := r.Summary(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if n := r.Counts; n.Calls != n.Allowed+n.Denied+n.Expired+n.Pending {
		t.Errorf("the counts do not add up: %+v", n)
	}
}
