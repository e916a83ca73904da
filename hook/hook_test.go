package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// answer runs Main and returns its exit code, stdout and the decision.
func answer(t *testing.T, stdin io.Reader, env map[string]string) (int, string, gjson.Result) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(Process{Stdin: stdin, Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }})
	if out.Len() > 0 && !json.Valid(out.Bytes()) {
		t.Fatalf("stdout is not JSON: %q", out.String())
	}
	return code, out.String(), gjson.Get(out.String(), "hookSpecificOutput")
}

const preToolUse = `{"session_id":"c1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1"}`

func TestFailsClosed(t *testing.T) {
	spoolDir := t.TempDir()
	noDaemon := map[string]string{"TOOLGATE_SESSION": "s1", "TOOLGATE_SOCKET": filepath.Join(spoolDir, "none.sock"),
		"TOOLGATE_SPOOL": filepath.Join(spoolDir, "spool.jsonl")}
	tests := []struct {
		name  string
		stdin io.Reader
		env   map[string]string
	}{
		{"no daemon", strings.NewReader(preToolUse), noDaemon},
		{"not run by toolgate run", strings.NewReader(preToolUse), map[string]string{}},
		{"not JSON", strings.NewReader(`{"hook_event_name":"PreToolUse",`), noDaemon},
		{"empty", strings.NewReader(""), noDaemon},
		{"too large", io.MultiReader(strings.NewReader(`{"hook_event_name":"PreToolUse","x":"`), &endless{}), noDaemon},
		{"unreadable", errReader{}, noDaemon},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, d := answer(t, tt.stdin, tt.env)
			if code != 0 {
				t.Errorf("exit %d: never anything but 0", code)
			}
			if d.Get("permissionDecision").String() != "deny" || d.Get("hookEventName").String() != "PreToolUse" ||
				!strings.Contains(d.Get("permissionDecisionReason").String(), "reason_code gate_unavailable") {
				t.Errorf("want a JSON deny gate_unavailable, got %q", out)
			}
		})
	}
	spooled, _ := os.ReadFile(noDaemon["TOOLGATE_SPOOL"])
	if !strings.Contains(string(spooled), `"tool_use_id":"toolu_1"`) || !strings.Contains(string(spooled), `"reason_code":"gate_unavailable"`) {
		t.Errorf("the denial was not spooled: %s", spooled)
	}
}

func TestPostEventsWithoutDaemonPrintNothing(t *testing.T) {
	env := map[string]string{"TOOLGATE_SESSION": "s1", "TOOLGATE_SOCKET": "/nonexistent.sock"}
	code, out, _ := answer(t, strings.NewReader(`{"hook_event_name":"PostToolUse","tool_use_id":"t"}`), env)
	if code != 0 || out != "" {
		t.Errorf("exit %d, stdout %q", code, out)
	}
}

// endless is an event larger than MaxEvent.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("broken pipe") }

// TestDependencies keeps the hook binary lean: it must not
// link the ledger's store, mcp-go, a JSON Schema compiler or the policy
// engine, whose initialisation alone costs milliseconds per tool call.
func TestDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../cmd/toolgate-hook").Output()
	if err != nil {
		t.Fatal(err)
	}
	bad := []string{"github.com/dgraph-io/", "github.com/mark3labs/mcp-go", "github.com/santhosh-tekuri/jsonschema",
		"github.com/toolgate/toolgate/policy", "github.com/toolgate/toolgate/ledger", "github.com/toolgate/toolgate/prompttool",
		"github.com/toolgate/toolgate/supervisor\n", "github.com/toolgate/toolgate/daemon\n", "github.com/urfave/cli", "mvdan.cc/sh",
		"net/http\n", "crypto/tls\n", // net/http's initialisation alone cost 0.3 ms a spawn
		"net\n",                       // the poller's set-up and hand-offs: api's socket reads block instead
		"crypto/sha256\n", "regexp\n", // a package's initialisation runs whether or not the hook calls it
		"net/url\n"} // net/netip's with it: about 30 µs a spawn
	deps := string(out)
	for _, b := range bad {
		if strings.Contains(deps, b) {
			t.Errorf("toolgate-hook depends on %s", strings.TrimSpace(b))
		}
	}
	// Beside gjson and sjson, Landlock: toolgate run starts a contained
	// claude through "toolgate-hook contain".
	allowed := []string{"vendor/", "crypto/", "github.com/tidwall/", "github.com/toolgate/toolgate/",
		"github.com/landlock-lsm/go-landlock/", "kernel.org/pub/linux/libs/security/libcap/psx", "golang.org/x/sys/unix"}
	for _, line := range strings.Split(strings.TrimSpace(deps), "\n") {
		if strings.Contains(line, ".") && !slices.ContainsFunc(allowed, func(p string) bool { return strings.HasPrefix(line, p) }) {
			t.Errorf("toolgate-hook has a new dependency %s: keep it lean or update this test on purpose", line)
		}
	}
}

// run is Main with arguments; it returns the exit code and stdout.
func run(t *testing.T, args []string, stdin string, env map[string]string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(Process{Args: args, Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut,
		Getenv: func(k string) string { return env[k] }})
	return code, out.String()
}

func TestInstalledHook(t *testing.T) {
	dir := t.TempDir()
	noDaemon := map[string]string{"TOOLGATE_RUNTIME_DIR": dir, "CLAUDE_PID": "1"}
	installed := []string{"--policy", "/p.json", "--approval-timeout", "1m"}
	permission := `{"session_id":"c1","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls"}}`
	tests := []struct {
		name  string
		args  []string
		event string
		env   map[string]string
		want  string // the decision, or "" for no answer
	}{
		// Inside a toolgate run session, toolgate run's own hook answers.
		{"inside toolgate run", installed, preToolUse, map[string]string{"TOOLGATE_SESSION": "s1"}, ""},
		{"no daemon: PreToolUse", installed, preToolUse, noDaemon, "deny"},
		// No daemon on a PermissionRequest: Claude Code's own dialog decides.
		{"no daemon: PermissionRequest", installed, permission, noDaemon, ""},
		{"no daemon: SessionEnd", installed, `{"session_id":"c1","hook_event_name":"SessionEnd"}`, noDaemon, ""},
		{"unknown flag", []string{"--polcy", "/p.json"}, preToolUse, noDaemon, "deny"},
		{"stray argument", []string{"extra"}, preToolUse, map[string]string{"TOOLGATE_SESSION": "s1"}, "deny"},
		{"no timeout", []string{"--policy", "/p.json", "--approval-timeout", "0s"}, preToolUse, noDaemon, "deny"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := run(t, tt.args, tt.event, tt.env)
			got := gjson.Get(out, "hookSpecificOutput.permissionDecision").String()
			if code != 0 || got != tt.want || (tt.want == "" && out != "") {
				t.Errorf("exit %d, stdout %q; want decision %q", code, out, tt.want)
			}
		})
	}
	// The denial without a daemon is spooled under Claude Code's session.
	spooled, _ := os.ReadFile(filepath.Join(dir, "spool", "c1.jsonl"))
	if !strings.Contains(string(spooled), `"tool_use_id":"toolu_1"`) {
		t.Errorf("not spooled under the session: %q", spooled)
	}
}

// An installed hook starts a daemon and asks again only when none could
// be reached: a request the daemon read before its connection broke may
// have been recorded (a PostToolUse: an execution), and asked again it
// would be recorded twice. The event is spooled instead, and the daemon
// never started.
func TestInstalledHookAsksOnceWhenTheRequestWasSent(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "gate.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	requests := make(chan string, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 64<<10)
			n, _ := c.Read(buf) // the whole request, then gone without an answer
			requests <- string(buf[:n])
			c.Close()
		}
	}()
	self, _ := os.Executable()
	started := 0
	env := map[string]string{"TOOLGATE_SOCKET": sock, "CLAUDE_PID": "1"}
	var out, errOut bytes.Buffer
	code := Main(Process{Args: []string{"--policy", "/p.json", "--approval-timeout", "1m"},
		Stdin:  strings.NewReader(`{"session_id":"c1","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1","tool_response":{}}`),
		Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }, DaemonExe: self,
		StartDaemon: func(context.Context) error { started++; return nil }})
	if code != 0 || out.Len() != 0 {
		t.Errorf("exit %d, stdout %q", code, out.String())
	}
	if n := len(requests); n != 1 || started != 0 {
		t.Errorf("%d requests, the daemon started %d times; want the one request, and no daemon started", n, started)
	}
}

// The hook runs as the hook with no arguments or an installed hook's
// flags, and refuses anything else (with a deny): toolgate run counts a
// settings hook as its own only then (supervisor.runsHook).
func TestCheckArgs(t *testing.T) {
	for _, args := range [][]string{nil, {"--policy", "/p.json"}, {"--policy=/p.json", "--approval-timeout", "15m"}} {
		if err := CheckArgs(args); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
	for _, args := range [][]string{{"contain", "--parent", "1", "--", "sh"}, {"--policy", "/p.json", "extra"},
		{"--policy", "/p.json", "--", "contain"}, {"--approval-timeout", "5m"}, {"--policy", "/p.json", "--approval-timeout", "0s"},
		{"--parent", "1"}} {
		if err := CheckArgs(args); err == nil {
			t.Errorf("%q: accepted", args)
		}
	}
}
