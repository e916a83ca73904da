package hook

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/paths"
)

// The hook's request is what json.Marshal gives: the same document, and
// the event's bytes exactly (compacted, HTML-escaped), which the daemon
// records and hashes.
func TestRequestBodyIsWhatJSONGives(t *testing.T) {
	events := []string{
		preToolUse,
		"{\n  \"hook_event_name\": \"PreToolUse\",\n  \"tool_input\": {\"command\": \"a < b && c > d\"}\n}\n",
		`{"tool_input":{"s":"\u2028 \u2029 é 🙂 \" \\ \n \u0001 </script>"},"n":1.50e3,"a":[true,false,null]}`,
	}
	installed := []*api.InstalledHook{nil, {PolicyPath: "/p.json", ApprovalTimeout: api.Duration(90 * time.Second)},
		{PolicyPath: "/a b/<p>\".json", ApprovalTimeout: api.Duration(time.Minute), ClaudePID: 4242, Home: "/home/é", ClaudeDir: "/home/é/.claude"}}
	for _, ev := range events {
		for _, in := range installed {
			for _, session := range []string{"", "ses_01 <&>"} {
				req := api.HookRequest{SessionID: session, Event: json.RawMessage(ev), Installed: in}
				mine, err := requestBody(req)
				if err != nil {
					t.Fatal(err)
				}
				theirs, err := json.Marshal(req)
				if err != nil {
					t.Fatal(err)
				}
				var a, b api.HookRequest
				if err := json.Unmarshal(mine, &a); err != nil {
					t.Fatalf("%s: %v", mine, err)
				}
				json.Unmarshal(theirs, &b)
				if !reflect.DeepEqual(a, b) {
					t.Errorf("the hook sends %s\njson.Marshal gives %s", mine, theirs)
				}
				if got, want := gjson.GetBytes(mine, "event").Raw, gjson.GetBytes(theirs, "event").Raw; got != want {
					t.Errorf("the event goes as %s, not as json.Marshal sends it: %s", got, want)
				}
			}
		}
	}
	if _, err := requestBody(api.HookRequest{Event: json.RawMessage(`{"a":`)}); err == nil {
		t.Error("an event that is not JSON was coded")
	}
}

// The hook reads the daemon's answer as json.Unmarshal would, every field
// of a verdict included.
func TestParseResponseIsWhatJSONGives(t *testing.T) {
	decided := time.Date(2026, 12, 1, 23, 4, 5, 123456789, time.UTC)
	expires := time.Date(2026, 12, 2, 1, 0, 0, 0, time.FixedZone("", 2*3600))
	full := api.Verdict{Effect: api.EffectAllow, RuleID: "r<1>", ReasonCode: api.ReasonUserApproved, Source: api.SourcePerson,
		Actor: "uid 1000 (toolgate approve) é", ApprovalID: "apr_1", DecidedAt: &decided, Message: "a \"message\"\n\u2028",
		ApprovalTimeout: api.Duration(90 * time.Second), UpdatedInput: json.RawMessage(`{"command":"ls -la"}`), ExpiresAt: &expires}
	for i, f := range reflect.VisibleFields(reflect.TypeOf(full)) {
		if reflect.ValueOf(full).Field(i).IsZero() {
			t.Fatalf("the full verdict leaves %s unset: set it, and read it in parseVerdict", f.Name)
		}
	}
	deny := api.Deny(api.ReasonGateUnavailable, api.SourceGate)
	for _, resp := range []api.HookResponse{{}, {Verdict: &full}, {Verdict: &deny}, {Verdict: &deny, Defer: true}, {Verdict: &api.Verdict{}}} {
		data, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		var want api.HookResponse
		json.Unmarshal(data, &want)
		got, err := parseResponse(data)
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s\nthe hook read %+v\njson.Unmarshal reads %+v", data, got, want)
		}
	}
}

// An answer that is not a HookResponse is an error, which the hook turns
// into a deny gate_unavailable.
func TestParseResponseRefusesWhatIsNotAHookResponse(t *testing.T) {
	for _, data := range []string{``, `[]`, `"allow"`, `{"verdict":"allow"}`, `{"verdict":{"effect":1}}`, `{"defer":"yes"}`,
		`{"verdict":{"decided_at":"yesterday"}}`, `{"verdict":{"approval_timeout":90}}`, `{"verdict":{"effect":"allow"}`} {
		if resp, err := parseResponse([]byte(data)); err == nil {
			t.Errorf("%s read as %+v", data, resp)
		} else if !strings.Contains(err.Error(), "not a hook response") {
			t.Errorf("%s: %v", data, err)
		}
	}
	if resp, err := parseResponse([]byte(`{"verdict":null}`)); err != nil || resp.Verdict != nil {
		t.Errorf("a null verdict: %+v, %v", resp, err)
	}
}

// answersJSONReadsOtherwise are answers that encoding/json reads other
// than the first member of each name says (it takes the last of a
// duplicate name, matches names case-insensitively, and hands null and
// the raw string to the types' own UnmarshalJSON): the daemon never sends
// them, but the hook must not read one more permissively than
// json.Unmarshal would.
var answersJSONReadsOtherwise = []string{
	`{"verdict":{"effect":"allow"},"verdict":{"effect":"deny"}}`,
	`{"verdict":{"effect":"allow"},"Verdict":{"effect":"deny"}}`,
	`{"verdict":{"effect":"allow"},"verdict":null}`,
	`{"verdict":{"effect":"allow"},"verdict":1}`,
	`{"verdict":null,"Verdict":{"effect":"allow"}}`,
	`{"Verdict":{"Effect":"allow"}}`,
	`{"verdict":{"effect":"allow","effect":"deny"}}`,
	`{"verdict":{"effect":"allow","EFFECT":"deny"}}`,
	`{"verdict":{"effect":"allow","effect":1}}`,
	`{"verdict":{"effect":"deny","reaſon_code":"policy_denied"}}`,
	`{"verdict":{"effect":"ask"},"defer":true,"defer":false}`,
	`{"verdict":{"effect":"ask"},"Defer":true}`,
	`{"verdict":{"effect":"allow","approval_timeout":null}}`,
	`{"verdict":{"effect":"allow","approval_timeout":"1h","approval_timeout":"soon"}}`,
	`{"verdict":{"effect":"allow","decided_at":"2026-12-01T23:04:05\u005a"}}`,
	`{"verdict":{"effect":"allow","updated_input":null}}`,
	`{"verdict":{"effect":"allow","updated_input":{"command":"ls"},"Updated_Input":{"command":"rm -rf ~"}}}`,
}

// The hook never reads an answer more permissively than json.Unmarshal:
// it reads what json.Unmarshal reads, or refuses the answer (a deny
// gate_unavailable).
func TestParseResponseIsNeverLooserThanJSON(t *testing.T) {
	for _, data := range answersJSONReadsOtherwise {
		checkParseResponse(t, []byte(data))
	}
}

func checkParseResponse(t *testing.T, data []byte) {
	t.Helper()
	checkNeverLooser(t, data, parseResponse, func(data []byte) (r api.HookResponse, err error) {
		return r, json.Unmarshal(data, &r)
	}, showResponse)
}

// checkNeverLooser fails when parse reads data although json.Unmarshal
// (decode) refuses it, or reads it otherwise; parse may refuse more.
func checkNeverLooser[T any](t *testing.T, data []byte, parse, decode func([]byte) (T, error), show func(T) string) {
	t.Helper()
	got, err := parse(data)
	if err != nil {
		return
	}
	want, jerr := decode(data)
	if jerr != nil {
		t.Errorf("%q: read as %s, json.Unmarshal fails: %v", data, show(got), jerr)
	} else if !reflect.DeepEqual(got, want) {
		t.Errorf("%q\nthe hook read %s\njson.Unmarshal reads %s", data, show(got), show(want))
	}
}

func showResponse(r api.HookResponse) string {
	if r.Verdict == nil {
		return fmt.Sprintf("{Defer:%v}", r.Defer)
	}
	return fmt.Sprintf("{Defer:%v Verdict:%+v UpdatedInput:%q}", r.Defer, *r.Verdict, r.Verdict.UpdatedInput)
}

func FuzzParseResponse(f *testing.F) {
	for _, data := range answersJSONReadsOtherwise {
		f.Add([]byte(data))
	}
	f.Add([]byte(`{"verdict":{"eff\u0065ct":"allow"},"d\u0065fer":true}`))
	f.Add([]byte(`{"verdict":{"effect":"allow","rule_id":"r","reason_code":"c","source":"s","actor":"a","approval_id":"i","decided_at":"2026-12-01T23:04:05Z","message":"m","approval_timeout":"1m","updated_input":{"a":1},"expires_at":"2026-12-01T23:04:05+02:00"},"defer":false}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !utf8.Valid(data) {
			return // json.Unmarshal replaces what is not UTF-8 in strings, gjson keeps it
		}
		checkParseResponse(t, data)
	})
}

// The request is what json.Marshal gives for any event: nothing in the
// event (a key "installed" or "session_id" at any depth, escapes, odd
// numbers) changes how the daemon reads the request around it.
func FuzzRequestBody(f *testing.F) {
	for _, ev := range []string{preToolUse,
		`{"tool_input":{"installed":{"policy_path":"/evil"},"session_id":"x"}}`,
		`{"installed":{"policy_path":"/evil"},"session_id":"x","event":1,"Installed":2}`,
		`{"tool_input":{"a":"\\\"}, \"installed\": {\"policy_path\":\"/evil\"}","b":"}\\"}}`,
		"{\"k\":\"\\u0000\\ud800 \xff\xe2\x80\xa8 <>&\"}", `1`, `"s"`, `[{"installed":1}]`, `null`,
		`{"n":123456789012345678901234567890e999999999}`, " {\"a\" : [ 1 , 2 ] } \n", "\ufeff{}",
	} {
		f.Add([]byte(ev), "ses_1", "/p.json")
	}
	f.Fuzz(func(t *testing.T, ev []byte, session, policyPath string) {
		for _, in := range []*api.InstalledHook{nil, {PolicyPath: policyPath, ApprovalTimeout: api.Duration(time.Minute), ClaudePID: 3, Home: "/h"}} {
			req := api.HookRequest{SessionID: session, Event: json.RawMessage(ev), Installed: in}
			mine, err := requestBody(req)
			theirs, jerr := json.Marshal(req)
			if (err == nil) != (jerr == nil) {
				t.Fatalf("%q: requestBody: %v, json.Marshal: %v", ev, err, jerr)
			}
			if err != nil {
				continue
			}
			var a, b api.HookRequest
			if err := json.Unmarshal(mine, &a); err != nil {
				t.Fatalf("%q: %v", mine, err)
			}
			json.Unmarshal(theirs, &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("the hook sends %s\njson.Marshal gives %s", mine, theirs)
			}
		}
	})
}

// The daemon's record as the daemon writes it (json.Marshal) is read as
// json.Unmarshal reads it, every field of it.
func TestParseDaemonRecordIsWhatJSONGives(t *testing.T) {
	full := paths.DaemonRecord{PID: 4242, RuntimeDir: "/run/user/1000/toolgate é \"q\"",
		Started: time.Date(2026, 12, 2, 1, 41, 0, 123456789, time.FixedZone("", -5*3600))}
	for i, f := range reflect.VisibleFields(reflect.TypeOf(full)) {
		if reflect.ValueOf(full).Field(i).IsZero() {
			t.Fatalf("the full record leaves %s unset: set it, and read it in parseDaemonRecord", f.Name)
		}
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag != recordFields[i] {
			t.Fatalf("recordFields[%d] is %q, the field %s is %q", i, recordFields[i], f.Name, tag)
		}
	}
	for _, rec := range []paths.DaemonRecord{full, {}, {PID: 1, RuntimeDir: "/r"}} {
		data, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := paths.DecodeDaemonRecord(data)
		got, err := parseDaemonRecord(data)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s\nthe hook read %+v, %v\njson.Unmarshal reads %+v", data, got, err, want)
		}
	}
}

// recordsJSONReadsOtherwise are records that json.Unmarshal reads other
// than their first member of each name says, or refuses, or that are no
// records: the daemon never writes them, and the hook must not read one
// more permissively than json.Unmarshal.
var recordsJSONReadsOtherwise = []string{
	``, `[]`, `"x"`, `1`, `null`, `{}`, `{"pid":1`, `{"pid":1}x`,
	`{"pid":1,"pid":2,"runtime_dir":"/r"}`, `{"pid":1,"PID":2,"runtime_dir":"/r"}`, `{"Pid":1,"runtime_dir":"/r"}`,
	`{"pid":1,"runtime_dir":"/r","runtime_dir":"/s"}`, `{"pid":1,"runtime_dir":"/r","Runtime_Dir":"/s"}`,
	`{"pid":1.0,"runtime_dir":"/r"}`, `{"pid":1e3,"runtime_dir":"/r"}`, `{"pid":-0,"runtime_dir":"/r"}`,
	`{"pid":99999999999999999999,"runtime_dir":"/r"}`, `{"pid":"1","runtime_dir":"/r"}`, `{"pid":true,"runtime_dir":"/r"}`,
	`{"pid":null,"runtime_dir":null,"started":null}`, `{"pid":1,"runtime_dir":1}`, `{"pid":1,"runtime_dir":["/r"]}`,
	`{"pid":1,"runtime_dir":"/r\u0000x"}`, `{"pid":1,"runtime_dir":"/r\ud800"}`, "{\"pid\":1,\"runtime_dir\":\"/r\xff\"}",
	`{"pid":1,"runtime_dir":"/r","started":"yesterday"}`, `{"pid":1,"runtime_dir":"/r","started":1}`,
	`{"pid":1,"runtime_dir":"/r","started":"2026-12-02T01:41:00\u005a"}`, `{"pid":1,"runtime_dir":"/r","started":{}}`,
	`{"pid":1,"runtime_dir":"/r","other":{"pid":2}}`, `{"pid":1,"runtime_\u0064ir":"/r"}`, "\ufeff{\"pid\":1}",
}

// The hook reads a record as json.Unmarshal reads it, or refuses it (and
// then finds the daemon where its environment says).
func TestParseDaemonRecordIsNeverLooserThanJSON(t *testing.T) {
	for _, data := range recordsJSONReadsOtherwise {
		checkParseDaemonRecord(t, []byte(data))
	}
}

func checkParseDaemonRecord(t *testing.T, data []byte) {
	t.Helper()
	checkNeverLooser(t, data, parseDaemonRecord, paths.DecodeDaemonRecord, func(r paths.DaemonRecord) string { return fmt.Sprintf("%+v", r) })
}

func FuzzParseDaemonRecord(f *testing.F) {
	for _, data := range recordsJSONReadsOtherwise {
		f.Add([]byte(data))
	}
	f.Add([]byte(`{"pid":4242,"runtime_dir":"/run/user/1000/toolgate","started":"2026-12-02T01:41:00.123456789-05:00"}`))
	f.Fuzz(checkParseDaemonRecord)
}
