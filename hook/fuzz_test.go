package hook

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"
)

// FuzzMain feeds arbitrary bytes to the hook as its event, with no daemon
// to answer: whatever comes in, the hook exits 0 and answers a PreToolUse
// (or an event it cannot read) with a JSON deny gate_unavailable, and
// answers nothing else.
func FuzzMain(f *testing.F) {
	for _, s := range []string{preToolUse, `{"hook_event_name":"PostToolUse","tool_use_id":"t"}`, `{`, ``, "\xff\xfe",
		`{"hook_event_name":"PreToolUse","tool_input":{"command":"` + "\x00" + `"}}`, `[1,2,3]`, `{"hook_event_name":7}`} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	env := map[string]string{"TOOLGATE_SESSION": "s", "TOOLGATE_SOCKET": filepath.Join(dir, "none.sock"),
		"TOOLGATE_SPOOL": filepath.Join(dir, "spool.jsonl")}
	f.Fuzz(func(t *testing.T, event []byte) {
		var out, errOut bytes.Buffer
		code := Main(Process{Stdin: bytes.NewReader(event), Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }})
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
		name := gjson.GetBytes(event, "hook_event_name")
		if gjson.ValidBytes(event) && name.Type == gjson.String && shapes[name.Str] {
			if out.Len() != 0 {
				t.Fatalf("answered a %s: %q", name.Str, out.String())
			}
			return
		}
		d := gjson.Get(out.String(), "hookSpecificOutput")
		if !gjson.Valid(out.String()) || d.Get("permissionDecision").String() != "deny" ||
			d.Get("hookEventName").String() != "PreToolUse" {
			t.Fatalf("not a JSON deny: %q", out.String())
		}
	})
}
