package supervisor

import (
	"cmp"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/claudecode"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/hook"
	"github.com/toolgate/toolgate/paths"
	"github.com/toolgate/toolgate/spool"
)

// fakeDaemon serves /v1/hook on a Unix socket with handler, as the daemon
// would, and returns a runner whose client and trusted gate point at it.
func fakeDaemon(t *testing.T, handler http.HandlerFunc) *runner {
	r, _ := fakeDaemonConns(t, handler)
	return r
}

// fakeDaemonConns is fakeDaemon, with the count of connections it took.
func fakeDaemonConns(t *testing.T, handler http.HandlerFunc) (*runner, *atomic.Int32) {
	t.Helper()
	dir, err := os.MkdirTemp("", "tgh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "gate.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int32
	srv := &http.Server{Handler: handler, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	g := &trustedGate{pid: os.Getpid()} // this process serves the socket
	c := client.NewClient(sock)
	c.KeepAlive, c.VerifyPeer = true, g.verify
	return &runner{log: slog.New(slog.DiscardHandler), gate: g, client: c, session: "ses_test", spool: filepath.Join(dir, "spool.jsonl")}, &conns
}

// post sends one hook request to the endpoint and returns the status and
// the decision it answered.
func post(t *testing.T, h http.Handler, token, body string) (int, gjson.Result) {
	t.Helper()
	req := httptest.NewRequest("POST", "/hook", strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	out := rec.Body.Bytes()
	if !gjson.ValidBytes(out) || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("not a JSON answer: %q", out)
	}
	return rec.Code, gjson.GetBytes(out, "hookSpecificOutput")
}

const preEvent = `{"hook_event_name":"PreToolUse","session_id":"cc","transcript_path":"/nowhere/t.jsonl","tool_name":"Read","tool_use_id":"toolu_1","tool_input":{"file_path":"a"}}`

func hooks(r *runner) *hookServer {
	return &hookServer{r: r, authorized: func(req *http.Request) bool { return req.Header.Get("Authorization") == "Bearer tok" },
		fromClaude: func(*http.Request) bool { return true }, deadline: 5 * time.Second}
}

// The endpoint answers the daemon's verdict, and every failure with 200
// and a deny gate_unavailable: Claude Code would let the call through any
// other answer (an error status, a closed connection, no answer in time).
func TestHookEndpointAlwaysAnswers(t *testing.T) {
	allow := func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		json.NewEncoder(w).Encode(api.HookResponse{Verdict: &api.Verdict{Effect: api.EffectAllow, RuleID: "allow-read"}})
	}
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	stall := func(w http.ResponseWriter, r *http.Request) { <-release }
	broken := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }
	tests := []struct {
		name     string
		daemon   http.HandlerFunc
		token    string
		body     string
		setup    func(t *testing.T, r *runner, h *hookServer)
		decision string
		spooled  bool
	}{
		{name: "the daemon's verdict", daemon: allow, token: "tok", body: preEvent, decision: "allow"},
		{name: "no token", daemon: allow, body: preEvent, decision: "deny"},
		{name: "a wrong token", daemon: allow, token: "other", body: preEvent, decision: "deny"},
		{name: "the token on a connection claude does not hold", daemon: allow, token: "tok", body: preEvent, decision: "deny",
			setup: func(_ *testing.T, _ *runner, h *hookServer) { h.fromClaude = func(*http.Request) bool { return false } }},
		{name: "not JSON", daemon: allow, token: "tok", body: `{"hook_event_name":`, decision: "deny"},
		{name: "another event", daemon: allow, token: "tok", body: `{"hook_event_name":"PostToolUse","tool_use_id":"toolu_1"}`, decision: "deny", spooled: true},
		{name: "larger than an event may be", daemon: allow, token: "tok", body: `{"x":"` + strings.Repeat("a", hook.MaxEvent) + `"}`, decision: "deny"},
		{name: "the daemon fails", daemon: broken, token: "tok", body: preEvent, decision: "deny", spooled: true},
		{name: "the daemon does not answer by the deadline", daemon: stall, token: "tok", body: preEvent, decision: "deny", spooled: true,
			setup: func(_ *testing.T, _ *runner, h *hookServer) { h.deadline = 100 * time.Millisecond }},
		{name: "another process answers on the socket", daemon: allow, token: "tok", body: preEvent, decision: "deny", spooled: true,
			setup: func(t *testing.T, r *runner, _ *hookServer) {
				r.gate.pid, r.gate.start.Paths = 1, paths.Paths{RuntimeDir: t.TempDir()} // and no socket to find it on again
			}},
		{name: "the gate is lost", daemon: allow, token: "tok", body: preEvent, decision: "deny", spooled: true,
			setup: func(_ *testing.T, r *runner, _ *hookServer) { r.gate.lost = os.ErrClosed }},
		{name: "a panic", daemon: allow, token: "tok", body: preEvent, decision: "deny", spooled: true,
			setup: func(_ *testing.T, r *runner, _ *hookServer) { r.gate = nil }},
		{name: "a settings layer that is a FIFO", daemon: allow, token: "tok", body: preEvent, decision: "deny", spooled: true,
			setup: func(t *testing.T, r *runner, _ *hookServer) {
				r.cfg.Cwd = t.TempDir()
				if err := os.Mkdir(filepath.Join(r.cfg.Cwd, ".claude"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Mkfifo(filepath.Join(r.cfg.Cwd, ".claude", "settings.local.json"), 0o600); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "the verdict held up before the daemon is asked", daemon: allow, token: "tok", body: preEvent, decision: "deny", spooled: true,
			setup: func(_ *testing.T, _ *runner, h *hookServer) {
				h.deadline, h.transcript = 100*time.Millisecond, func(string) { <-release }
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fakeDaemon(t, tt.daemon)
			h := hooks(r)
			if tt.setup != nil {
				tt.setup(t, r, h)
			}
			code, out := post(t, h, tt.token, tt.body)
			if code != 200 || out.Get("permissionDecision").Str != tt.decision || out.Get("hookEventName").Str != api.PreToolUse {
				t.Errorf("%d %s, want 200 and %s", code, out.Raw, tt.decision)
			}
			if tt.decision == "deny" && !strings.Contains(out.Get("permissionDecisionReason").Str, "gate_unavailable") {
				t.Errorf("the deny should say gate_unavailable: %s", out.Raw)
			}
			lines, _ := spool.Read(r.spool)
			if (len(lines) > 0) != tt.spooled {
				t.Errorf("spooled %+v, want spooled %v", lines, tt.spooled)
			}
		})
	}
}

// An ask holds Claude Code's hook request until the person decides, and
// the endpoint answers what they decided; a wait the daemon cannot finish,
// or an ask that names no approval, is a deny gate_unavailable, never the
// ask (which claude -p refuses without a word in the audit) nor no answer.
func TestHookEndpointWaitsForThePerson(t *testing.T) {
	for _, tt := range []struct {
		name, approval string
		waited         http.HandlerFunc
		decision       string
		expired        bool // the approval expired a moment before its grace ends
	}{
		{name: "approved", approval: "apr_1", decision: "allow", waited: func(w http.ResponseWriter, _ *http.Request) {
			json.NewEncoder(w).Encode(api.Verdict{Effect: api.EffectAllow, Source: api.SourcePerson, Actor: "user:alice"})
		}},
		{name: "denied", approval: "apr_1", decision: "deny", waited: func(w http.ResponseWriter, _ *http.Request) {
			json.NewEncoder(w).Encode(api.Verdict{Effect: api.EffectDeny, ReasonCode: api.ReasonApprovalExpired, Source: api.SourceExpiry,
				Message: "nobody decided in time"})
		}},
		{name: "the wait fails", approval: "apr_1", decision: "deny", waited: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }},
		{name: "no approval", decision: "deny"},
		{name: "no answer past the expiry", approval: "apr_1", decision: "deny", expired: true, waited: func(_ http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var waits atomic.Int32
			r := fakeDaemon(t, func(w http.ResponseWriter, req *http.Request) {
				io.Copy(io.Discard, req.Body)
				if req.URL.Path == "/v1/approvals/"+tt.approval+"/wait" && tt.waited != nil {
					waits.Add(1)
					tt.waited(w, req)
					return
				}
				if req.URL.Path != "/v1/hook" {
					w.WriteHeader(404)
					return
				}
				v := api.Verdict{Effect: api.EffectAsk, ApprovalID: tt.approval, RuleID: "ask-read"}
				if tt.expired {
					expired := time.Now().Add(-askMargin/2 + 200*time.Millisecond)
					v.ExpiresAt = &expired
				}
				json.NewEncoder(w).Encode(api.HookResponse{Verdict: &v})
			})
			var stderr strings.Builder
			r.cfg.Stderr, r.askTimeout = &stderr, AskTimeout(time.Minute, 0)
			_, out := post(t, hooks(r), "tok", preEvent)
			if got := out.Get("permissionDecision").Str; got != tt.decision {
				t.Fatalf("answered %s, want %s", out.Raw, tt.decision)
			}
			if tt.name != "approved" && tt.name != "denied" {
				contains := strings.Contains(out.Get("permissionDecisionReason").Str, "gate_unavailable")
				if lines, _ := spool.Read(r.spool); !contains || len(lines) != 1 {
					t.Errorf("want a deny gate_unavailable, spooled: %s, %+v", out.Raw, lines)
				}
			}
			if tt.waited != nil && (waits.Load() != 1 || !strings.Contains(stderr.String(), "waiting for approval apr_1")) {
				t.Errorf("%d waits; stderr %q", waits.Load(), stderr.String())
			}
			if got := r.answered["toolu_1"].Effect; string(got) != tt.decision {
				t.Errorf("run keeps %q as its answer for the report, want %s", got, tt.decision)
			}
		})
	}
}

// A kept connection carries every hook event of the session.
func TestHookEndpointKeepsItsConnection(t *testing.T) {
	r, conns := fakeDaemonConns(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		json.NewEncoder(w).Encode(api.HookResponse{Verdict: &api.Verdict{Effect: api.EffectAllow}})
	})
	h := hooks(r)
	for range 5 {
		if _, out := post(t, h, "tok", preEvent); out.Get("permissionDecision").Str != "allow" {
			t.Fatalf("answer %s", out.Raw)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 5 events, want 1", n)
	}
}

// installedClaude installs an npm-style claude of version v (any, when "") under
// dir and returns its .bin path.
func installedClaude(t *testing.T, v string) string {
	t.Helper()
	dir := t.TempDir()
	pkg := filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code")
	os.MkdirAll(filepath.Join(pkg, "bin"), 0o755)
	if v != "" {
		os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name": "@anthropic-ai/claude-code", "version": "`+v+`"}`), 0o644)
	}
	os.WriteFile(filepath.Join(pkg, "bin", "claude.exe"), []byte("#!/bin/sh\n"), 0o755)
	bin := filepath.Join(dir, "node_modules", ".bin", "claude")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	os.Symlink("../@anthropic-ai/claude-code/bin/claude.exe", bin)
	return bin
}

// http hooks are used only where Claude Code sends them to run's listener:
// never with its sandbox on, whose proxy refuses them, and only with a
// release whose transcript says which calls ran.
func TestHookTransport(t *testing.T) {
	cwd, claudeDir := t.TempDir(), t.TempDir()
	pinned, old, unknown := installedClaude(t, claudecode.PinnedVersion), installedClaude(t, "2.1.150"), installedClaude(t, "")
	tests := []struct {
		asked    string
		args     []string
		userFile string
		claude   string // pinned when ""
		want     string // "" when refused
	}{
		{asked: HookAuto, claude: old, want: HookCommand},
		{asked: HookHTTP, claude: old, want: ""},
		{asked: HookAuto, claude: unknown, want: HookCommand},
		{asked: HookHTTP, claude: unknown, want: ""},
		{asked: HookCommand, claude: old, want: HookCommand},
		{asked: "", want: HookHTTP},
		{asked: HookAuto, want: HookHTTP},
		{asked: HookCommand, want: HookCommand},
		{asked: HookAuto, args: []string{"-p", "--settings", `{"sandbox":{"enabled":true}}`}, want: HookCommand},
		{asked: HookHTTP, args: []string{"--settings=" + `{"sandbox":{"enabled":true}}`}, want: ""},
		{asked: HookAuto, args: []string{"--settings", `{"sandbox":{"enabled":false}}`}, want: HookHTTP},
		{asked: HookAuto, userFile: `{"sandbox":{"enabled":true}}`, want: HookCommand},
		{asked: HookAuto, args: []string{"--settings", "missing.json"}, want: HookCommand},
		{asked: "stdio", want: ""},
	}
	for _, tt := range tests {
		os.Remove(filepath.Join(claudeDir, "settings.json"))
		if tt.userFile != "" {
			os.WriteFile(filepath.Join(claudeDir, "settings.json"), []byte(tt.userFile), 0o600)
		}
		claude := cmp.Or(tt.claude, pinned)
		cfg := RunConfig{HookTransport: tt.asked, Claude: claude, ClaudeArgs: tt.args, Cwd: cwd, Env: []string{"CLAUDE_CONFIG_DIR=" + claudeDir}}
		got, err := hookTransport(cfg)
		if got != tt.want || (err != nil) != (tt.want == "") {
			t.Errorf("%q %q user %q claude %s: %q %v, want %q", tt.asked, tt.args, tt.userFile, claude, got, err, tt.want)
		}
	}
}

func TestNoProxyLoopback(t *testing.T) {
	for _, tt := range []struct {
		env  []string
		want string
	}{
		{[]string{"PATH=/bin"}, "127.0.0.1"},
		{[]string{"https_proxy=http://proxy:3128", "NO_PROXY=a.example", "no_proxy=example.com"}, "example.com,127.0.0.1"},
		{[]string{"NO_PROXY=127.0.0.1"}, "127.0.0.1"},
	} {
		env, list := noProxyLoopback(tt.env)
		if list != tt.want || env[len(env)-2] != "NO_PROXY="+tt.want || env[len(env)-1] != "no_proxy="+tt.want {
			t.Errorf("%q: %q %q, want %q", tt.env, env, list, tt.want)
		}
	}
}

// A request without the token is denied without its body being read: a
// body that never ends (the model's code holding the listener) gets its
// answer all the same.
func TestHookEndpointDoesNotReadAStrangersBody(t *testing.T) {
	r := fakeDaemon(t, func(w http.ResponseWriter, r *http.Request) {})
	h := hooks(r)
	body, endless := io.Pipe()
	t.Cleanup(func() { endless.Close() })
	go endless.Write([]byte(`{"hook_event_name":"PreToolUse",`)) // and nothing more, ever
	req := httptest.NewRequest("POST", "/hook", body)
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() { h.ServeHTTP(rec, req); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to a request without the token whose body never ends")
	}
	if out := gjson.GetBytes(rec.Body.Bytes(), "hookSpecificOutput.permissionDecision").Str; rec.Code != 200 || out != "deny" || rec.Header().Get("Connection") != "close" {
		t.Errorf("%d %s %v, want 200, a deny, and the connection closed", rec.Code, rec.Body.String(), rec.Header())
	}
}
