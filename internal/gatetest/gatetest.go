// Package gatetest starts a real gate daemon in the test's process, on
// real sockets and a real ledger, with a session to ask from: what the
// approvers' tests (watch, notify) need. Only tests import it.
package gatetest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/daemon"
	"github.com/toolgate/toolgate/paths"
)

// Gate is a running daemon and a session registered with it.
type Gate struct {
	Client   *client.Client // gate.sock: what toolgate run talks to
	Approver *client.Client // approve.sock: what people talk to
	Session  string
	Paths    paths.Paths
}

// Start starts a daemon until the test ends, and registers a session whose
// supervisor is a process of its own (not the test's), so that the test
// may decide the session's approvals. Asks wait up to timeout.
func Start(t *testing.T, timeout time.Duration) *Gate {
	t.Helper()
	p := Daemon(t)
	g := &Gate{Client: client.NewClient(p.Socket()), Approver: client.NewClient(p.ApproveSocket()), Paths: p}
	s, err := g.Client.Register(context.Background(), api.RegisterRequest{Policy: json.RawMessage(`{"version":1,"default":"ask","rules":[]}`),
		PolicyName: "p", SupervisorPID: Supervisor(t), ApprovalTimeout: api.Duration(timeout)})
	if err != nil {
		t.Fatal(err)
	}
	g.Session = s.ID
	return g
}

// Daemon starts a daemon in the test's process, on real sockets and a
// real ledger in directories of the test's, until the test ends.
func Daemon(t *testing.T) paths.Paths {
	t.Helper()
	rt, err := os.MkdirTemp("", "tgt") // short: socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	p := paths.Paths{RuntimeDir: filepath.Join(rt, "toolgate"), StateDir: filepath.Join(t.TempDir(), "state")}
	ctx, cancel := context.WithCancel(context.Background())
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- daemon.Serve(ctx, daemon.Config{Paths: p, Ready: w}) }()
	if _, err := r.Read(make([]byte, 6)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-done })
	return p
}

// Supervisor starts a process that stands for a session's supervisor (not
// the test's own process, which then stays free to decide approvals) and
// returns its pid. It ends with the test.
func Supervisor(t *testing.T) int {
	t.Helper()
	supervisor := exec.Command("sleep", "300")
	if err := supervisor.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { supervisor.Process.Kill(); supervisor.Wait() })
	return supervisor.Process.Pid
}

// Ask makes the session ask about one call (git push), as Claude Code
// would: its PreToolUse hook, then the prompt tool. It returns the
// prompt's verdict: an ask with its approval's id.
func (g *Gate) Ask(t *testing.T, toolUseID string) api.Verdict {
	t.Helper()
	return g.AskFor(t, toolUseID, `{"command":"git push"}`)
}

// AskFor is Ask for a Bash call with this input.
func (g *Gate) AskFor(t *testing.T, toolUseID, input string) api.Verdict {
	t.Helper()
	event := `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":` + input + `,"tool_use_id":"` + toolUseID + `"}`
	if _, err := g.Client.Hook(context.Background(), api.HookRequest{SessionID: g.Session, Event: json.RawMessage(event)}); err != nil {
		t.Fatalf("PreToolUse: %v", err)
	}
	v, err := g.Client.Prompt(context.Background(), api.PromptRequest{SessionID: g.Session, ToolName: "Bash", ToolUseID: toolUseID,
		Input: json.RawMessage(input)})
	if err != nil || v.Effect != api.EffectAsk {
		t.Fatalf("ask: %+v %v", v, err)
	}
	return v
}
