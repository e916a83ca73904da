package policy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
)

// Session.Evaluate is the gate's whole decision of one call, in order:
// a tool that needs a person, the input's schema, the rules.
func TestSessionEvaluate(t *testing.T) {
	p := mustParse(t, `{"version":1,"default":"deny","rules":[
		{"id":"ask-pr","effect":"ask","tool":"mcp__gh__pr","approval_timeout":"2m","reason_code":"review"},
		{"id":"allow-sign","effect":"allow","tool":"mcp__gh__sign"}],
		"schemas":{"mcp__gh__issue":{"type":"object","required":["title"]}}}`)
	tools := []api.ToolInfo{
		{Name: "mcp__gh__pr", InputSchema: json.RawMessage(`{"type":"object","properties":{"base":{"type":"string"}},"required":["base"]}`)},
		{Name: "mcp__gh__sign", RequiresUserInteraction: true},
		{Name: "mcp__gh__issue", InputSchema: json.RawMessage(`{"type":"object"}`)},        // the policy's own schema wins
		{Name: "mcp__gh__broken", InputSchema: json.RawMessage(`{"type":"no-such-type"}`)}, // left out
	}
	s := NewSession(p, tools, "/project", "/home/user")
	tests := []struct {
		tool, input string
		effect      api.Effect
		reason      string
		source      string
		message     string // a part of the message for the model
	}{
		{"mcp__gh__sign", `{}`, api.EffectDeny, api.ReasonRequiresUser, api.SourceDowngrade, "interactive"},
		{"mcp__gh__pr", `{"base":7}`, api.EffectDeny, api.ReasonSchemaInvalid, api.SourceSchema, "/base: "},
		{"mcp__gh__pr", `{"title":"x"}`, api.EffectDeny, api.ReasonSchemaInvalid, api.SourceSchema, "schema. The input: "},
		{"mcp__gh__pr", `{"base":"main"}`, api.EffectAsk, "review", api.SourcePolicy, ""},
		{"mcp__gh__issue", `{}`, api.EffectDeny, api.ReasonSchemaInvalid, api.SourceSchema, "title"},
		{"mcp__gh__broken", `{}`, api.EffectDeny, api.ReasonDefault, api.SourcePolicy, "default is to deny"},
		{"Read", `[1]`, api.EffectDeny, api.ReasonSchemaInvalid, api.SourceSchema, "not a JSON object"},
	}
	for _, tt := range tests {
		v := s.Evaluate(tt.tool, []byte(tt.input))
		if v.Effect != tt.effect || v.ReasonCode != tt.reason || v.Source != tt.source || !strings.Contains(v.Message, tt.message) {
			t.Errorf("%s %s: got %s %s %s %q", tt.tool, tt.input, v.Effect, v.ReasonCode, v.Source, v.Message)
		}
		if v.Effect == api.EffectDeny && !strings.HasSuffix(v.Message, " "+api.RetryNotice) {
			t.Errorf("%s: the message must say not to retry: %q", tt.tool, v.Message)
		}
	}
	if v := s.Evaluate("mcp__gh__pr", []byte(`{"base":"main"}`)); time.Duration(v.ApprovalTimeout) != 2*time.Minute {
		t.Errorf("the rule's approval_timeout: %v", v.ApprovalTimeout)
	}
}

// A call runs where Claude Code says it does (its Bash tool keeps a cd):
// the paths of its input resolve there, the rules' paths against the
// session's project.
func TestSessionIn(t *testing.T) {
	p := mustParse(t, `{"version":4,"default":"allow","rules":[
		{"id":"deny-env","effect":"deny","tool":"Bash","input":{"command":{"argument_under":[".env"]}},"reason_code":"secret_file"},
		{"id":"deny-read","effect":"deny","tool":"Read","input":{"file_path":{"path_under":"secrets"}},"reason_code":"secret_file"},
		{"id":"ask-deploy","effect":"ask","tool":"Bash","input":{"command":{"command":[["./deploy.sh"]]}},"reason_code":"deploy"}]}`)
	s := NewSession(p, nil, "/project", "/home/user")
	tests := []struct {
		cwd, tool, input string
		effect           api.Effect
	}{
		{"/project/sub", "Bash", `{"command":"cat ../.env"}`, api.EffectDeny},
		{"/project/sub", "Bash", `{"command":"cat .env"}`, api.EffectAllow}, // /project/sub/.env
		{"/project", "Bash", `{"command":"cat .env"}`, api.EffectDeny},
		{"/project/sub", "Read", `{"file_path":"../secrets/key"}`, api.EffectDeny},
		{"/project/sub", "Read", `{"file_path":"secrets/key"}`, api.EffectAllow},
		{"/project/sub", "Bash", `{"command":"../deploy.sh"}`, api.EffectAsk},
		{"/project/sub", "Bash", `{"command":"./deploy.sh"}`, api.EffectAllow}, // another script
		{"", "Bash", `{"command":"cat .env"}`, api.EffectDeny},                 // the session's own
	}
	for _, tt := range tests {
		if v := s.In(tt.cwd).Evaluate(tt.tool, []byte(tt.input)); v.Effect != tt.effect {
			t.Errorf("in %q: %s %s: %+v, want %s", tt.cwd, tt.tool, tt.input, v, tt.effect)
		}
	}
}
