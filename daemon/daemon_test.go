package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/paths"
)

var ctx = context.Background()

// errorCode is the daemon's error code of err, or "".
func errorCode(err error) string {
	var se *client.StatusError
	if errors.As(err, &se) {
		return se.Err.Code
	}
	return ""
}

// testPaths are short paths for one daemon (socket paths are limited).
func testPaths(t testing.TB) paths.Paths {
	t.Helper()
	rt, err := os.MkdirTemp("", "tgd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	return paths.Paths{RuntimeDir: filepath.Join(rt, "toolgate"), StateDir: filepath.Join(t.TempDir(), "state")}
}

// startDaemonInProcess runs a real daemon on real sockets and a real
// ledger until the test ends.
func startDaemonInProcess(t testing.TB, p paths.Paths) *client.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, w, _ := os.Pipe()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, Config{Paths: p, Version: "test", Ready: w}) }()
	buf := make([]byte, 6)
	if _, err := r.Read(buf); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	return client.NewClient(p.Socket())
}

const testPolicy = `{"version": 2, "default": "ask", "rules": [
  {"id": "deny-rm", "effect": "deny", "tool": "Bash", "input": {"command": {"command": [["rm"]]}}, "reason_code": "destructive"},
  {"id": "allow-ls", "effect": "allow", "tool": "Bash", "input": {"command": {"command": [["ls"]]}}}]}`

func register(t testing.TB, c *client.Client) string {
	t.Helper()
	s, err := c.Register(ctx, api.RegisterRequest{Policy: json.RawMessage(testPolicy), PolicyName: "p.json",
		Cwd: "/project", SupervisorPID: os.Getpid(),
		Tools: []api.ToolInfo{{Name: "mcp__gh__pr", InputSchema: json.RawMessage(`{"type":"object","required":["base"]}`)},
			{Name: "mcp__gh__sign", RequiresUserInteraction: true}}})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

func pre(id, tool, input string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"hook_event_name":"PreToolUse","tool_name":%q,"tool_input":%s,"tool_use_id":%q}`, tool, input, id))
}

func TestDaemonDecides(t *testing.T) {
	c := startDaemonInProcess(t, testPaths(t))
	sid := register(t, c)
	tests := []struct {
		id, tool, input string
		effect          api.Effect
		reason, rule    string
	}{
		{"t1", "Bash", `{"command":"ls -la"}`, "allow", "", "allow-ls"},
		{"t2", "Bash", `{"command":"ls && rm -rf /"}`, "deny", "destructive", "deny-rm"},
		{"t3", "Bash", `{"command":"make"}`, "ask", "default", ""},
		{"t4", "mcp__gh__pr", `{"title":"x"}`, "deny", "schema_invalid", ""},
		{"t5", "mcp__gh__sign", `{}`, "deny", "requires_user_interaction", ""},
		{"t1", "Bash", `{"command":"ls -la"}`, "deny", "duplicate_tool_use_id", ""},      // the same call again: it may be running
		{"t2", "Bash", `{"command":"ls && rm -rf /"}`, "deny", "destructive", "deny-rm"}, // a denied one again: the same decision
		{"t3", "Bash", `{"command":"make"}`, "deny", "duplicate_tool_use_id", ""},        // an ask again, while it waits
		{"t1", "Bash", `{"command":"rm -rf /"}`, "deny", "tool_use_id_conflict", ""},     // the same id, another input
	}
	asked := map[string]string{} // approval ids, by tool_use_id
	for _, tt := range tests {
		resp, err := c.Hook(ctx, api.HookRequest{SessionID: sid, Event: pre(tt.id, tt.tool, tt.input)})
		if err != nil {
			t.Fatalf("%s: %v", tt.id, err)
		}
		v := resp.Verdict
		if v == nil || v.Effect != tt.effect || v.ReasonCode != tt.reason || v.RuleID != tt.rule {
			t.Errorf("%s %s: got %+v, want %s %s %s", tt.id, tt.input, v, tt.effect, tt.reason, tt.rule)
		}
		if v != nil && v.Effect == "ask" && (!strings.HasPrefix(v.ApprovalID, "apr_") || v.ExpiresAt == nil) {
			t.Errorf("%s: an ask is an approval at once: %+v", tt.id, v)
		}
		if v != nil && v.Effect == "ask" {
			asked[tt.id] = v.ApprovalID
		}
		if v != nil && v.Effect == "deny" && !strings.Contains(v.Message, "reason_code "+tt.reason) {
			t.Errorf("%s: message %q", tt.id, v.Message)
		}
	}
	// Executed once; a second run of the same id is refused.
	post := json.RawMessage(`{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls -la"},"tool_use_id":"t1","tool_response":{}}`)
	if _, err := c.Hook(ctx, api.HookRequest{SessionID: sid, Event: post}); err != nil {
		t.Fatal(err)
	}
	resp, _ := c.Hook(ctx, api.HookRequest{SessionID: sid, Event: pre("t1", "Bash", `{"command":"ls -la"}`)})
	if resp.Verdict.ReasonCode != "duplicate_tool_use_id" {
		t.Errorf("a repeat after execution: %+v", resp.Verdict)
	}
	// The prompt tool (the hook binary's asks go to it) finds the same
	// approval.
	v, err := c.Prompt(ctx, api.PromptRequest{SessionID: sid, ToolName: "Bash", ToolUseID: "t3", Input: json.RawMessage(`{"command":"make"}`)})
	if err != nil || v.Effect != "ask" || v.ApprovalID != asked["t3"] || v.ExpiresAt == nil {
		t.Errorf("prompt on an ask: %+v %v, want approval %s", v, err, asked["t3"])
	}
	if _, err := c.Hook(ctx, api.HookRequest{SessionID: sid, Event: pre("t6", "Bash", `{"command":"ls"}`)}); err != nil {
		t.Fatal(err)
	}
	v, err = c.Prompt(ctx, api.PromptRequest{SessionID: sid, ToolName: "Bash", ToolUseID: "t6", Input: json.RawMessage(`{"command":"ls"}`)})
	if err != nil || v.Effect != "allow" || string(v.UpdatedInput) != `{"command":"ls"}` {
		t.Errorf("prompt on a call the hook allowed: %+v %v", v, err)
	}
	// toolgate run's hook proposes every call before Claude Code asks the
	// prompt tool: a prompt for a call never proposed comes from whatever
	// read the tool's token, and is denied.
	v, err = c.Prompt(ctx, api.PromptRequest{SessionID: sid, ToolName: "Bash", ToolUseID: "t9", Input: json.RawMessage(`{"command":"ls"}`)})
	if err != nil || v.Effect != "deny" || v.ReasonCode != api.ReasonNotProposed {
		t.Errorf("prompt on a call the hook never saw: %+v %v", v, err)
	}
	calls, err := c.SessionCalls(ctx, sid)
	if err != nil || len(calls) != 7 {
		t.Fatalf("calls: %d %v", len(calls), err)
	}
}

func TestDaemonRefusesBadEvents(t *testing.T) {
	c := startDaemonInProcess(t, testPaths(t))
	sid := register(t, c)
	for _, ev := range []string{`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{}}`,
		`{"hook_event_name":"Nope"}`, `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":"x","tool_use_id":"t"}`} {
		_, err := c.Hook(ctx, api.HookRequest{SessionID: sid, Event: json.RawMessage(ev)})
		if errorCode(err) != "bad_event" && errorCode(err) != "bad_request" {
			t.Errorf("%s: %v", ev, err)
		}
	}
	if _, err := c.Hook(ctx, api.HookRequest{SessionID: "ses_nope", Event: pre("t", "Bash", `{}`)}); errorCode(err) != "not_found" {
		t.Errorf("unknown session: %v", err)
	}
}

// TestSessionsSurviveARestart: a restarted daemon goes on gating a session
// it finds in the ledger, with the same policy and schemas.
func TestSessionsSurviveARestart(t *testing.T) {
	p := testPaths(t)
	ctx1, cancel := context.WithCancel(context.Background())
	r, w, _ := os.Pipe()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx1, Config{Paths: p, Ready: w}) }()
	r.Read(make([]byte, 6))
	sid := register(t, client.NewClient(p.Socket()))
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c := startDaemonInProcess(t, p)
	resp, err := c.Hook(ctx, api.HookRequest{SessionID: sid, Event: pre("t4", "mcp__gh__pr", `{}`)})
	if err != nil || resp.Verdict.ReasonCode != "schema_invalid" {
		t.Fatalf("after a restart: %+v %v", resp, err)
	}
}

func TestSocketHygiene(t *testing.T) {
	p := testPaths(t)
	c := startDaemonInProcess(t, p)
	info, _ := os.Stat(p.RuntimeDir)
	if info.Mode().Perm() != 0o700 {
		t.Errorf("runtime directory %v, want 0700", info.Mode().Perm())
	}
	info, _ = os.Stat(p.Socket())
	if info.Mode().Perm() != 0o600 {
		t.Errorf("socket %v, want 0600", info.Mode().Perm())
	}
	// A second daemon for the same runtime directory refuses to start.
	if err := Serve(ctx, Config{Paths: p}); !errors.Is(err, ErrRunning) {
		t.Errorf("second daemon: %v", err)
	}
	if _, err := c.Status(ctx); err != nil {
		t.Errorf("the first daemon was disturbed: %v", err)
	}
}

func rawRequest(t *testing.T, sock string, header http.Header) (int, string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return net.Dial("unix", sock)
	}}}
	req, _ := http.NewRequest("GET", "http://toolgate/v1/status", nil)
	req.Header = header
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e api.Error
	json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Code
}

func TestRefusesBrowsersAndOtherProtocols(t *testing.T) {
	p := testPaths(t)
	startDaemonInProcess(t, p)
	proto := http.Header{api.HeaderProtocol: {fmt.Sprint(api.ProtocolVersion)}}
	if code, _ := rawRequest(t, p.Socket(), proto); code != 200 {
		t.Fatalf("a good request: %d", code)
	}
	for name, h := range map[string]http.Header{
		"origin":   {api.HeaderProtocol: proto[api.HeaderProtocol], "Origin": {"http://evil.example"}},
		"referer":  {api.HeaderProtocol: proto[api.HeaderProtocol], "Referer": {"http://evil.example/"}},
		"protocol": {api.HeaderProtocol: {"999"}},
		"none":     {},
	} {
		code, errCode := rawRequest(t, p.Socket(), h)
		if code == 200 || errCode == "" {
			t.Errorf("%s: %d %q, want a refusal", name, code, errCode)
		}
	}
}

// TestRefusesOtherUsers connects as another uid (the test needs root to
// change its uid; CI runs as root).
func TestRefusesOtherUsers(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test changes uid and must run as root (CI does)")
	}
	p := testPaths(t)
	startDaemonInProcess(t, p)
	os.Chmod(filepath.Dir(p.RuntimeDir), 0o755)
	os.Chmod(p.RuntimeDir, 0o755) // let the other user reach the socket file at all
	os.Chmod(p.Socket(), 0o666)   // and connect: the daemon must still refuse it
	cmd := exec.Command("curl", "-s", "--unix-socket", p.Socket(), "-H", api.HeaderProtocol+": 1", "http://toolgate/v1/status")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("curl as nobody: %v", err)
	}
	if !strings.Contains(string(out), `"code":"forbidden"`) {
		t.Errorf("another uid got %s", out)
	}
}

// TestStaleSocketIsReplaced: after a daemon is killed, its socket file
// stays; the next daemon replaces it because the lock is free.
func TestStaleSocketIsReplaced(t *testing.T) {
	p := testPaths(t)
	if err := p.MakeRuntimeDir(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", p.Socket())
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // a socket file nobody listens on, as a SIGKILLed daemon leaves
	c := startDaemonInProcess(t, p)
	if _, err := c.Status(ctx); err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
}

func TestSocketPathThatIsNotASocket(t *testing.T) {
	p := testPaths(t)
	p.MakeRuntimeDir()
	os.WriteFile(p.Socket(), []byte("not a socket"), 0o600)
	err := Serve(ctx, Config{Paths: p})
	if err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Errorf("a regular file at the socket path: %v", err)
	}
	os.Remove(p.Socket())
	os.Symlink("/tmp", p.Socket())
	err = Serve(ctx, Config{Paths: p})
	if err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Errorf("a symlink at the socket path: %v", err)
	}
}

func TestIdleExit(t *testing.T) {
	p := testPaths(t)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- Serve(ctx, Config{Paths: p, IdleExit: 200 * time.Millisecond}) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("an idle daemon did not exit")
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Error("exited before its idle period")
	}
}
