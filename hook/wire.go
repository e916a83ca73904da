package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/paths"
)

// The hook codes its request to the daemon and reads the answer with
// sjson and gjson, not with encoding/json's Marshal and Unmarshal, whose
// reflection is set up afresh in every process: in a process spawned for
// one request it took about a twentieth of the time from spawn to answer
// (3.26-3.42× /bin/true with it, 3.15-3.29× without, in the same
// alternating rounds). Tests hold both to what encoding/json gives.

// requestBody is req as the daemon reads it. The event goes as
// json.Marshal sends a json.RawMessage, compacted and HTML-escaped: those
// are the bytes the daemon records. It goes last, appended: sjson would
// scan it again for every field set after it (an event may be megabytes).
func requestBody(req api.HookRequest) ([]byte, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, req.Event); err != nil {
		return nil, fmt.Errorf("the event: %w", err)
	}
	head := []byte("{}")
	var err error
	set := func(path string, v any) {
		if err == nil {
			head, err = sjson.SetBytes(head, path, v)
		}
	}
	if req.SessionID != "" {
		set("session_id", req.SessionID)
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
	if err != nil {
		return nil, err
	}
	var body bytes.Buffer
	body.Grow(len(head) + compact.Len() + 16)
	body.Write(head[:len(head)-1]) // without its closing brace
	if len(head) > 2 {
		body.WriteByte(',')
	}
	body.WriteString(`"event":`)
	json.HTMLEscape(&body, compact.Bytes())
	body.WriteByte('}')
	return body.Bytes(), nil
}

// errAnswer is an answer from the daemon that is not a HookResponse.
var errAnswer = errors.New("the daemon's answer is not a hook response")

// parseResponse reads the daemon's answer, a HookResponse's JSON, as
// json.Unmarshal would, or refuses it: a field of the wrong type, and a
// field named twice or in another case, which json.Unmarshal would read
// otherwise than gjson (it takes the last, whatever its case). The daemon
// never sends those; the hook must not read any answer more permissively
// than json.Unmarshal.
func parseResponse(data []byte) (api.HookResponse, error) {
	var resp api.HookResponse
	if !gjson.ValidBytes(data) {
		return resp, errAnswer
	}
	doc := gjson.ParseBytes(data)
	if !doc.IsObject() {
		return resp, errAnswer
	}
	var f [2]gjson.Result
	if err := members(doc, responseFields[:], f[:]); err != nil {
		return resp, fmt.Errorf("%w: %v", errAnswer, err)
	}
	switch d := f[1]; d.Type {
	case gjson.True:
		resp.Defer = true
	case gjson.False, gjson.Null:
	default:
		return resp, fmt.Errorf("%w: defer is %s", errAnswer, d.Raw)
	}
	v := f[0]
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

// responseFields are the names of api.HookResponse's fields, and
// verdictFields those of api.Verdict's (a test checks that none is left
// out).
var (
	responseFields = [...]string{"verdict", "defer"}
	verdictFields  = [...]string{"effect", "rule_id", "reason_code", "source", "actor", "approval_id", "message",
		"decided_at", "expires_at", "approval_timeout", "updated_input"}
)

// members sets out[i] to the member of obj named names[i]. A member that
// json.Unmarshal would match to one of names (whose name equals it but for
// case) and that is not exactly it, or one named twice, is an error.
func members(obj gjson.Result, names []string, out []gjson.Result) error {
	var err error
	obj.ForEach(func(key, value gjson.Result) bool {
		for i, name := range names {
			if !strings.EqualFold(key.Str, name) {
				continue
			}
			if key.Str != name || out[i].Exists() {
				err = fmt.Errorf("%s named twice or as %s", name, key.Raw)
				return false
			}
			out[i] = value
			return true
		}
		return true
	})
	return err
}

// parseVerdict reads every field of an api.Verdict (a test checks that
// none is left out) as json.Unmarshal would.
func parseVerdict(v gjson.Result) (api.Verdict, error) {
	var out api.Verdict
	var f [len(verdictFields)]gjson.Result
	if err := members(v, verdictFields[:], f[:]); err != nil {
		return out, err
	}
	var effect string
	for i, dst := range [...]*string{&effect, &out.RuleID, &out.ReasonCode, &out.Source, &out.Actor, &out.ApprovalID, &out.Message} {
		switch f[i].Type {
		case gjson.String:
			*dst = f[i].Str
		case gjson.Null:
		default:
			return out, fmt.Errorf("%s is %s", verdictFields[i], f[i].Raw)
		}
	}
	out.Effect = api.Effect(effect)
	// time.Time's and api.Duration's own UnmarshalJSON, as json.Unmarshal
	// calls them: time.Time reads the string's bytes unescaped, and
	// api.Duration refuses null.
	for i, dst := range [...]**time.Time{&out.DecidedAt, &out.ExpiresAt} {
		switch x := f[7+i]; x.Type {
		case gjson.String:
			var t time.Time
			if err := t.UnmarshalJSON([]byte(x.Raw)); err != nil {
				return out, fmt.Errorf("%s: %w", verdictFields[7+i], err)
			}
			*dst = &t
		case gjson.Null:
		default:
			return out, fmt.Errorf("%s is %s", verdictFields[7+i], x.Raw)
		}
	}
	if x := f[9]; x.Exists() {
		if err := out.ApprovalTimeout.UnmarshalJSON([]byte(x.Raw)); err != nil {
			return out, fmt.Errorf("approval_timeout is %s: %w", x.Raw, err)
		}
	}
	if x := f[10]; x.Exists() {
		out.UpdatedInput = json.RawMessage(x.Raw) // null too, as json.Unmarshal reads it
	}
	return out, nil
}

// errRecord is a daemon record that is not one.
var errRecord = errors.New("not a daemon record")

// recordFields are the names of paths.DaemonRecord's fields (a test checks
// that none is left out).
var recordFields = [...]string{"pid", "runtime_dir", "started"}

// parseDaemonRecord reads the daemon's record (api.DaemonRecordFile) as
// json.Unmarshal would, or refuses it, as parseResponse reads an answer.
// An installed hook reads it at every call to find the live daemon, and
// json.Unmarshal's reflection, set up afresh in each hook process, took
// 68-109 µs of that.
func parseDaemonRecord(data []byte) (paths.DaemonRecord, error) {
	var rec paths.DaemonRecord
	if !gjson.ValidBytes(data) {
		return rec, errRecord
	}
	doc := gjson.ParseBytes(data)
	switch {
	case doc.Type == gjson.Null:
		return rec, nil
	case !doc.IsObject():
		return rec, errRecord
	}
	var f [len(recordFields)]gjson.Result
	if err := members(doc, recordFields[:], f[:]); err != nil {
		return rec, fmt.Errorf("%w: %v", errRecord, err)
	}
	switch pid := f[0]; pid.Type {
	case gjson.Number:
		n, err := strconv.ParseInt(pid.Raw, 10, 0) // json.Unmarshal reads an int so
		if err != nil {
			return rec, fmt.Errorf("%w: pid is %s", errRecord, pid.Raw)
		}
		rec.PID = int(n)
	case gjson.Null:
	default:
		return rec, fmt.Errorf("%w: pid is %s", errRecord, pid.Raw)
	}
	switch dir := f[1]; dir.Type {
	case gjson.String:
		if !utf8.ValidString(dir.Str) { // json.Unmarshal would replace what is not UTF-8
			return rec, fmt.Errorf("%w: runtime_dir is not UTF-8", errRecord)
		}
		rec.RuntimeDir = dir.Str
	case gjson.Null:
	default:
		return rec, fmt.Errorf("%w: runtime_dir is %s", errRecord, dir.Raw)
	}
	switch started := f[2]; started.Type {
	case gjson.String: // time.Time's own UnmarshalJSON, as json.Unmarshal calls it
		if err := rec.Started.UnmarshalJSON([]byte(started.Raw)); err != nil {
			return rec, fmt.Errorf("%w: started: %v", errRecord, err)
		}
	case gjson.Null:
	default:
		return rec, fmt.Errorf("%w: started is %s", errRecord, started.Raw)
	}
	return rec, nil
}
