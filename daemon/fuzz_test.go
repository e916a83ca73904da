package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/ledger"
)

// FuzzAPIRequests sends arbitrary bodies to the daemon's hook and prompt
// routes (a real daemon: real socket, ledger and policy): it must never
// die, must answer every request with a JSON body, must allow nothing but
// a well-formed call of a session it knows (the run's, or one an installed
// hook's request registered with POLICY, which allows everything and so
// never waits), and must leave the audit chain intact.
func FuzzAPIRequests(f *testing.F) {
	for _, s := range []string{
		`{"session_id":"S","event":{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t1"}}`,
		`{"session_id":"S","event":{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{},"tool_use_id":"t1"}}`,
		`{"session_id":"S","event":{"hook_event_name":"PostToolBatch","tool_calls":[{"tool_use_id":"t1","tool_response":"x"}]}}`,
		`{"session_id":"S","tool_name":"Bash","tool_use_id":"t2","input":{"command":"ls; rm -rf /"}}`,
		`{"session_id":"S","event":"x"}`, `{`, `null`, `{"session_id":"nope","event":{}}`,
		`{"event":{"session_id":"c1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t3"},` +
			`"installed":{"policy_path":"POLICY","approval_timeout":"1s"}}`,
		`{"event":{"session_id":"c1","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls"}},` +
			`"installed":{"policy_path":"POLICY","approval_timeout":"1s"}}`,
	} {
		f.Add([]byte(s), bytes.Contains([]byte(s), []byte(`"input"`)))
	}
	p := testPaths(f)
	f.Cleanup(func() { // runs after the daemon has stopped (cleanups run last-in, first-out)
		l, err := ledger.Open(p.LedgerDir(), ledger.Options{})
		if err != nil {
			f.Error(err)
			return
		}
		defer l.Close()
		if _, err := l.Verify(context.Background()); err != nil {
			f.Error(err)
		}
	})
	c := startDaemonInProcess(f, p)
	sid := register(f, c)
	installed := filepath.Join(f.TempDir(), "allow.json")
	if err := os.WriteFile(installed, []byte(`{"version":1,"default":"allow","rules":[]}`), 0o600); err != nil {
		f.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", p.Socket())
	}}}
	f.Fuzz(func(t *testing.T, body []byte, prompt bool) {
		body = bytes.ReplaceAll(body, []byte(`"S"`), []byte(strconv.Quote(sid)))
		body = bytes.ReplaceAll(body, []byte(`"POLICY"`), []byte(strconv.Quote(installed)))
		path := "/v1/hook"
		if prompt {
			path = "/v1/prompt"
		}
		req, _ := http.NewRequest("POST", "http://toolgate"+path, bytes.NewReader(body))
		req.Header.Set(api.HeaderProtocol, strconv.Itoa(api.ProtocolVersion))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("the daemon did not answer: %v", err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("status %d without a JSON body: %v", resp.StatusCode, err)
		}
		if resp.StatusCode != http.StatusOK {
			return
		}
		effect := out["effect"]
		if v, ok := out["verdict"].(map[string]any); ok {
			effect = v["effect"]
		}
		if effect != "allow" {
			return
		}
		// Only a session the daemon knows gets an allow: the run's, or one
		// an installed hook's request registered (this one or an earlier).
		// The session as the daemon reads it (encoding/json matches keys
		// whatever their case: "instAlled" is installed).
		var sent api.HookRequest
		json.Unmarshal(body, &sent)
		session := sent.SessionID
		if sent.Installed != nil && !prompt {
			session = gjson.GetBytes(sent.Event, "session_id").String()
		}
		if _, err := c.Session(context.Background(), session); err != nil {
			t.Fatalf("allowed a request of no session (%q: %v): %q", session, err, body)
		}
	})
}
