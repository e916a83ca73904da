package claudecode

import (
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/api"
)

func TestAnswers(t *testing.T) {
	input := json.RawMessage(`{"command":"git push"}`)
	for _, tt := range []struct {
		event string
		v     api.Verdict
		want  string
	}{
		{api.PreToolUse, api.Verdict{Effect: api.EffectAllow, RuleID: "allow-ls"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"allowed by toolgate (rule allow-ls)"}}`},
		{api.PreToolUse, api.Verdict{Effect: api.EffectAsk, ReasonCode: "default"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"toolgate asks for approval (reason_code default)"}}`},
		{api.PreToolUse, api.Verdict{Effect: api.EffectDeny, Message: "no"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}`},
		// Anything but allow or ask is a deny: the hook never says "no opinion".
		{api.PreToolUse, api.Verdict{Effect: "", ReasonCode: api.ReasonGateUnavailable},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"` +
				api.DenyMessage(api.Verdict{ReasonCode: api.ReasonGateUnavailable}, "") + `"}}`},
		{api.PermissionRequest, api.Verdict{Effect: api.EffectAllow, UpdatedInput: input},
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"command":"git push"}}}}`},
		{api.PermissionRequest, api.Verdict{Effect: api.EffectDeny, RuleID: "ask-push", ReasonCode: "publishes", Message: "no"},
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"no"}}}`},
		{api.PermissionRequest, api.Verdict{Effect: api.EffectAsk, ReasonCode: api.ReasonHandedToClaude}, ``},
		{api.PostToolUse, api.Verdict{Effect: api.EffectAllow}, ``},
	} {
		if got := string(Answer(tt.event, tt.v)); got != tt.want {
			t.Errorf("%s %+v:\n got %s\nwant %s", tt.event, tt.v, got, tt.want)
		}
	}
}

func TestHooksSettings(t *testing.T) {
	got := string(HooksSettings("GOMAXPROCS=1 exec '/bin/toolgate-hook'", api.PreToolUse, api.PostToolUse))
	group := `[{"matcher":"*","hooks":[{"type":"command","command":"GOMAXPROCS=1 exec '/bin/toolgate-hook'","timeout":30}]}]`
	if want := `{"disableAllHooks":false,"hooks":{"PreToolUse":` + group + `,"PostToolUse":` + group + `}}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestHTTPHooksSettings(t *testing.T) {
	got := string(HTTPHooksSettings("http://127.0.0.1:9/hook", "tok", 30, "example.com,127.0.0.1", api.PreToolUse))
	want := `{"disableAllHooks":false,"allowedHttpHookUrls":["http://127.0.0.1:9/hook"],"sandbox":{"enabled":false},` +
		`"env":{"NO_PROXY":"example.com,127.0.0.1","no_proxy":"example.com,127.0.0.1"},"hooks":{"PreToolUse":[{"matcher":"*","hooks":[` +
		`{"type":"http","url":"http://127.0.0.1:9/hook","headers":{"Authorization":"Bearer tok"},"timeout":30}]}]}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
