package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolgate/toolgate/api"
)

// The hook codes its request to the daemon and reads the answer with
// sjson and gjson, not with encoding/json's Marshal and Unmarshal, whose
// reflection is set up afresh in every process: in a process spawned for
// one request it took about a twentieth of the time from spawn to answer
// (3.26-3.42× /bin/true with it, 3.15-3.29× without, in the same
// alternating rounds). Tests hold both to what encoding/json gives.

// requestBody is req as the daemon reads it. The event goes as
// json.Marshal sends a json.RawMessage, compacted and HTML-escaped: those
// are the bytes the daemon records.
func requestBody(req api.HookRequest) ([]byte, error) {
	var compact, event bytes.Buffer
	if err := json.Compact(&compact, req.Event); err != nil {
		return nil, fmt.Errorf("the event: %w", err)
	}
	json.HTMLEscape(&event, compact.Bytes())
	body := []byte("{}")
	var err error
	set := func(path string, v any) {
		if err == nil {
			body, err = sjson.SetBytes(body, path, v)
		}
	}
	if req.SessionID != "" {
		set("session_id", req.SessionID)
	}
	if err == nil {
		body, err = sjson.SetRawBytes(body, "event", event.Bytes())
	}
	if in := req.Installed; in != nil {
		set("installed.policy_path", in.PolicyPath)
		set("installed.approval_timeout", time.Duration(in.ApprovalTimeout).String())
		if in.ClaudePID != 0 {
			set("installed.claude_pid", in.ClaudePID)
		}
		if in.Home != "" {
			set("installed.home", in.Home)
		}
		if in.ClaudeDir != "" {
			set("installed.claude_dir", in.ClaudeDir)
		}
	}
	return body, err
}

// errAnswer is an answer from the daemon that is not a HookResponse.
var errAnswer = errors.New("the daemon's answer is not a hook response")

// parseResponse reads the daemon's answer, a HookResponse's JSON, as
// json.Unmarshal would; a field of the wrong type fails it.
func parseResponse(data []byte) (api.HookResponse, error) {
	var resp api.HookResponse
	if !gjson.ValidBytes(data) {
		return resp, errAnswer
	}
	doc := gjson.ParseBytes(data)
	if !doc.IsObject() {
		return resp, errAnswer
	}
	switch d := doc.Get("defer"); d.Type {
	case gjson.True:
		resp.Defer = true
	case gjson.False, gjson.Null:
	default:
		return resp, fmt.Errorf("%w: defer is %s", errAnswer, d.Raw)
	}
	v := doc.Get("verdict")
	if v.Type == gjson.Null {
		return resp, nil
	}
	if !v.IsObject() {
		return resp, fmt.Errorf("%w: verdict is %s", errAnswer, v.Raw)
	}
	verdict, err := parseVerdict(v)
	if err != nil {
		return resp, fmt.Errorf("%w: %v", errAnswer, err)
	}
	resp.Verdict = &verdict
	return resp, nil
}

// parseVerdict reads every field of an api.Verdict (a test checks that
// none is left out).
func parseVerdict(v gjson.Result) (api.Verdict, error) {
	var out api.Verdict
	var effect string
	for key, dst := range map[string]*string{"effect": &effect, "rule_id": &out.RuleID, "reason_code": &out.ReasonCode,
		"source": &out.Source, "actor": &out.Actor, "approval_id": &out.ApprovalID, "message": &out.Message} {
		switch f := v.Get(key); f.Type {
		case gjson.String:
			*dst = f.Str
		case gjson.Null:
		default:
			return out, fmt.Errorf("%s is %s", key, f.Raw)
		}
	}
	out.Effect = api.Effect(effect)
	for key, dst := range map[string]**time.Time{"decided_at": &out.DecidedAt, "expires_at": &out.ExpiresAt} {
		switch f := v.Get(key); f.Type {
		case gjson.String:
			t, err := time.Parse(time.RFC3339, f.Str)
			if err != nil {
				return out, fmt.Errorf("%s: %w", key, err)
			}
			*dst = &t
		case gjson.Null:
		default:
			return out, fmt.Errorf("%s is %s", key, f.Raw)
		}
	}
	switch f := v.Get("approval_timeout"); f.Type {
	case gjson.String:
		d, err := time.ParseDuration(f.Str)
		if err != nil {
			return out, fmt.Errorf("approval_timeout: %w", err)
		}
		out.ApprovalTimeout = api.Duration(d)
	case gjson.Null:
	default:
		return out, fmt.Errorf("approval_timeout is %s", f.Raw)
	}
	if f := v.Get("updated_input"); f.Exists() && f.Type != gjson.Null {
		out.UpdatedInput = json.RawMessage(f.Raw)
	}
	return out, nil
}
