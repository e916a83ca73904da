package policy

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
)

func recorded(id, session, tool, input string, at int) api.Call {
	return api.Call{ToolUseID: id, SessionID: session, ToolName: tool, Input: json.RawMessage(input),
		ProposedAt: time.Date(2026, 12, 1, 9, 0, at, 0, time.UTC)}
}

// The replay of the change that made protected-branch.json the design article's: the docs
// search loosens (ask to allow, listed first), the feature bases tighten,
// master asks by another rule, and .env stays denied.
func TestReplayGroupsChanges(t *testing.T) {
	old, err := Load(filepath.Join("..", "testdata", "diff", "protected-branch-before.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := NewReplayer(old, articlePolicy(t))
	r.AddSession(api.HistorySession{ID: "s1", Cwd: "/project", Home: "/home/u"})
	calls := []api.Call{
		recorded("t1", "s1", "mcp__github__create_pull_request", `{"base":"develop","head":"x","title":"t"}`, 1),
		recorded("t2", "s1", "mcp__docs__search", `{"q":"a"}`, 3),
		recorded("t3", "s1", "mcp__docs__search", `{"q":"b"}`, 2),
		recorded("t4", "s1", "mcp__github__create_pull_request", `{"base":"master","head":"x","title":"t"}`, 4),
		recorded("t5", "s1", "Read", `{"file_path":"/project/.env"}`, 5),
	}
	for _, c := range calls {
		r.Replay(c)
	}
	rep := r.Report()
	if rep.Calls != 5 || rep.Changed != 3 || rep.Loosened != 2 || rep.Tightened != 1 || rep.OtherRule != 1 || rep.WithoutSession != 0 {
		t.Fatalf("report %+v", rep)
	}
	loosen, tighten := rep.Changes[0], rep.Changes[1]
	if loosen.From != api.EffectAsk || loosen.To != api.EffectAllow || !loosen.Loosens || loosen.Count != 2 ||
		loosen.Calls[0].ToolUseID != "t3" || loosen.Rules[0].String() != "default -> allow-docs-search" || loosen.Rules[0].Count != 2 || loosen.Rules[0].Old != nil {
		t.Errorf("the loosening change: %+v", loosen)
	}
	if tighten.From != api.EffectAllow || tighten.To != api.EffectAsk || tighten.Loosens ||
		tighten.Rules[0].String() != "allow-pr-feature -> default" || tighten.Rules[0].Count != 1 || tighten.Calls[0].New.RuleID != nil {
		t.Errorf("the tightening change: %+v", tighten)
	}
}

// Each call is decided as the gate decided it: in its session's working
// directory and home, with the tool schemas its MCP servers published. A
// call whose session is unknown is decided without them, and counted.
func TestReplayUsesTheSessions(t *testing.T) {
	old := mustParse(t, `{"version":1,"default":"allow","rules":[
		{"id":"deny-env","effect":"deny","tool":"Read","input":{"file_path":{"const":".env"}},"reason_code":"secret"},
		{"id":"deny-keys","effect":"deny","tool":"Read","input":{"file_path":{"path_under":"~/.ssh"}},"reason_code":"secret"}]}`)
	new := mustParse(t, `{"version":2,"default":"allow","rules":[],
		"schemas":{"mcp__gh__pr":{"type":"object"}}}`)
	r := NewReplayer(old, new)
	r.AddSession(api.HistorySession{ID: "s1", Cwd: "/project", Home: "/home/u", Tools: []api.ToolInfo{
		{Name: "mcp__gh__pr", InputSchema: json.RawMessage(`{"type":"object","required":["base"]}`)},
		{Name: "mcp__gh__sign", RequiresUserInteraction: true}}})
	for i, c := range []struct{ session, tool, input string }{
		{"s1", "Read", `{"file_path":"/project/.env"}`},   // deny -> allow: .env of the session's project
		{"s1", "Read", `{"file_path":"/home/u/.ssh/id"}`}, // deny -> allow: under the session's home
		{"s1", "mcp__gh__pr", `{}`},                       // deny (the server's schema) -> allow (the policy's wins)
		{"s1", "mcp__gh__sign", `{}`},                     // requires a person under both
		{"gone", "Read", `{"file_path":"/project/.env"}`}, // no session: no working directory
	} {
		r.Replay(recorded(fmt.Sprint("t", i), c.session, c.tool, c.input, i))
	}
	rep := r.Report()
	if rep.Calls != 5 || rep.Loosened != 3 || rep.WithoutSession != 1 || len(rep.Changes) != 1 {
		t.Fatalf("report %+v", rep)
	}
	want := map[string]string{"t0": "deny-env secret", "t1": "deny-keys secret", "t2": "default schema_invalid"}
	for _, c := range rep.Changes[0].Calls {
		if got := ruleName(c.Old.RuleID) + " " + c.Old.ReasonCode; got != want[c.ToolUseID] {
			t.Errorf("%s: old %s, want %s", c.ToolUseID, got, want[c.ToolUseID])
		}
		if c.WithoutSession {
			t.Errorf("%s was replayed in its session", c.ToolUseID)
		}
	}
}
