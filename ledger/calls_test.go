package ledger

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
)

// proposalInputs are inputs that the encoding of a proposal must carry as
// json.Marshal does: compacted, with <, >, & and the line separators
// escaped, and ones that hold the very fields the encoding is cut at.
var proposalInputs = []string{
	`{}`,
	`{"command":"ls"}`,
	"{ \"command\" :\n\t\"a < b && c > d\" ,\"x\":[1, 2.50,  -0e3]}",
	`{"a":"x&y"}`, `{"a":"<"}`, `{"a":">"}`,
	`{"proposed_at":"0001-01-01T00:00:00Z","executed":false,"executions":0}`,
	`{"a":"\"proposed_at\":\"0001-01-01T00:00:00Z\""}`,
	`{"input":null,"b":"\"input\":null"}`,
	"{\"s\":\"\u2028\u2029 ſ \\ud83d\\ude00 \\u0000\"}",
	`[true,null,"x"]`,
	`"a string"`,
	`12`,
}

// The document of a call_proposed event is hashed into the audit chain: the
// encoding made outside the committer must give json.Marshal's bytes.
func TestProposalIsWhatJSONGives(t *testing.T) {
	times := []time.Time{
		time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC),
		time.Date(2026, 12, 2, 3, 4, 5, 120_000_000, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Unix(0, 1).UTC(),
	}
	calls := []api.Call{
		{ToolUseID: "toolu_1", SessionID: "s1", ToolName: "Bash"},
		{ToolUseID: "toolu_<2>", SessionID: "s&1", AgentID: "agent-1", ToolName: "mcp__x__y", Cwd: "/tmp/a \"b\""},
		{ToolUseID: `"input":null`, SessionID: `","input":null,"`, AgentID: `"input":null`, ToolName: "Bash"},
	}
	for _, input := range proposalInputs {
		for _, c := range calls {
			for _, at := range times {
				c.Input = json.RawMessage(input)
				checkProposal(t, c, at)
			}
		}
	}
}

func FuzzProposal(f *testing.F) {
	for _, input := range proposalInputs {
		f.Add(input, "toolu_1", "s1", "", "Bash", "/tmp", int64(1764644645123456789))
	}
	f.Fuzz(func(t *testing.T, input, id, session, agent, tool, cwd string, nanos int64) {
		if !json.Valid([]byte(input)) {
			return // Record refuses it before encoding
		}
		c := api.Call{ToolUseID: id, SessionID: session, AgentID: agent, ToolName: tool, Input: json.RawMessage(input), Cwd: cwd}
		checkProposal(t, c, time.Unix(0, nanos).UTC())
	})
}

// Every string of a proposal, any of its times a clock can give (years 1
// to 9999, any nanosecond), and inputs the model writes to confuse the
// cut (the field itself, in keys and values, escaped or not; HTML
// characters; invalid UTF-8; deep nesting): the spliced encoding is
// json.Marshal's.
func FuzzProposalOfAnyCallAtAnyTime(f *testing.F) {
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

// newProposal finds the input's place by the first "input":null in the
// encoding of the call without it: every field before Input must be a
// string, in which quotes are escaped.
func TestProposalCutsAfterStrings(t *testing.T) {
	typ := reflect.TypeFor[api.Call]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Name == "Input" {
			return
		}
		if f.Type.Kind() != reflect.String {
			t.Fatalf("api.Call.%s, before Input, is a %s: newProposal's cut at %s may then fall inside it", f.Name, f.Type, inputNull)
		}
	}
	t.Fatal("api.Call has no field Input")
}

func checkProposal(t *testing.T, c api.Call, at time.Time) {
	t.Helper()
	hash := InputSHA256(c.ToolName, c.Input)
	doc, err := newProposal(c)
	if err != nil {
		t.Fatalf("newProposal(%q): %v", c.Input, err)
	}
	want := proposal(c)
	want.InputSHA256, want.ProposedAt = hash, at
	raw, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.at(at); !bytes.Equal(got, raw) {
		t.Errorf("proposal of %q at %v:\n got %s\nwant %s", c.Input, at, got, raw)
	}
}

// Record refuses an input that is not JSON, whole: nothing is recorded.
func TestRecordRefusesAnInputThatIsNotJSON(t *testing.T) {
	l, _ := openTest(t, nil)
	for _, input := range []string{``, `{`, `{"a":1} x`, `{"a":1}{}`, "{\"a\":\"\xff\"", `nul`} {
		p := api.Call{ToolUseID: "toolu_bad", SessionID: "s1", ToolName: "Bash", Input: json.RawMessage(input)}
		if _, _, err := l.Record(ctx, p, api.Verdict{}, false); err == nil {
			t.Errorf("input %q recorded", input)
		}
	}
	if _, err := l.Call(ctx, "toolu_bad"); err == nil {
		t.Error("a refused call is in the ledger")
	}
	if c := mustPropose(t, l, "toolu_ok", "{ \"a\" : [1, 2] }"); c.InputSHA256 != InputSHA256("Bash", []byte(`{"a":[1,2]}`)) {
		t.Errorf("the hash of an input is not that of its compacted form: %s", c.InputSHA256)
	}
}
