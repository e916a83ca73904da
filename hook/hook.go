// Package hook is the logic of toolgate-hook, the lean binary Claude Code
// spawns for every hook event: it reads one event on stdin, forwards it raw
// to the daemon, and prints the answer the way Claude Code expects it. It
// never opens the ledger and never evaluates policy.
//
// It runs in one of two modes. Spawned under toolgate run (no flags), the
// session is the run's. Installed in Claude Code's settings by toolgate
// install (--policy FILE), the session is Claude Code's own: the daemon
// registers it on its first event with that policy, and a PermissionRequest
// waits there for a person. An installed hook stays silent inside a
// toolgate run session, whose own hook answers.
//
// Its exit contract lives in Main: the answer is always JSON on stdout with
// exit status 0, or nothing at all where no answer is the answer. A deny is
// the JSON deny (exit 2 would show the hook's command line to the model),
// and anything that goes wrong on a PreToolUse (no daemon, a malformed
// event, an internal error, a panic) is a deny with reason_code
// gate_unavailable: Claude Code treats a crash, bad output or a timeout as
// "no verdict" and would let an auto-allowed call run.
//
// It may import only this package's dependencies: the api package, gjson,
// sjson and the standard library (a test enforces it).
//
// Environment:
//
//	TOOLGATE_SESSION      the session id (set by toolgate run)
//	TOOLGATE_SOCKET       the daemon's socket (set by toolgate run; else
//	                      gate.sock in the runtime directory, see api.RuntimeDir)
//	TOOLGATE_SPOOL        a file where calls denied without the daemon are recorded
//	CLAUDE_PID, HOME      (set by Claude Code) the session's claude and home
package hook

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolgate/toolgate/supervisor/api"
)

// MaxEvent bounds the event read from stdin. A larger one is denied.
const MaxEvent = 8 << 20

// maxSpooledInput bounds the tool input kept in the spool file.
const maxSpooledInput = 64 << 10

// Timeout bounds the round trip to the daemon: the hook must answer well
// before the timeout Claude Code gives it (30 s), or the CLI would treat its
// silence as no verdict. A PermissionRequest waits for a person instead,
// for up to its approval timeout and PermissionMargin.
const Timeout = 10 * time.Second

// PermissionMargin is how much longer than its approval timeout a
// PermissionRequest may take: toolgate install sets the hook's own timeout
// in Claude Code's settings twice as far beyond it.
const PermissionMargin = 15 * time.Second

// DefaultApprovalTimeout is how long an installed hook's PermissionRequest
// waits for a person when --approval-timeout is not given.
const DefaultApprovalTimeout = 5 * time.Minute

// Process is what Main needs of its process.
type Process struct {
	Args           []string // the arguments after the program's name
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// StartDaemon starts the daemon when an installed hook finds none; nil
	// never starts one.
	StartDaemon func(ctx context.Context) error
}

// Main runs the hook and returns its exit status, which is always 0.
func Main(p Process) (code int) {
	event := "PreToolUse"
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(p.Stderr, "toolgate-hook: internal error: %v\n", r)
			writeAnswer(p.Stdout, event, unavailable())
		}
	}()
	raw, err := io.ReadAll(io.LimitReader(p.Stdin, MaxEvent+1))
	switch {
	case err != nil:
		return answerLocal(p, event, raw, fmt.Errorf("read the event: %w", err))
	case len(raw) > MaxEvent:
		return answerLocal(p, event, nil, fmt.Errorf("the event is larger than %d bytes", MaxEvent))
	}
	if !gjson.ValidBytes(raw) {
		return answerLocal(p, event, nil, fmt.Errorf("the event is not valid JSON"))
	}
	// Only the events after a call (and a PermissionRequest, whose silence
	// hands it to Claude Code's dialog) may go without a deny; anything
	// else, a PreToolUse or an event that is not what it should be, gets
	// a verdict.
	if name := gjson.GetBytes(raw, "hook_event_name"); name.Type == gjson.String && shapes[name.Str] {
		event = name.Str
	}
	installed, err := parseFlags(p)
	if err != nil {
		return answerLocal(p, event, raw, err)
	}
	req := api.HookRequest{SessionID: p.Getenv("TOOLGATE_SESSION"), Event: raw}
	if installed != nil {
		if req.SessionID != "" {
			return 0 // inside a toolgate run session: its own hook answers
		}
		req.Installed = installed
	} else if req.SessionID == "" {
		return answerLocal(p, event, raw, fmt.Errorf("TOOLGATE_SESSION is not set: run claude through toolgate run, or install the hook with toolgate install"))
	}
	resp, err := ask(p, event, req)
	if err != nil {
		return answerLocal(p, event, raw, err)
	}
	switch {
	case resp.Verdict != nil:
		writeAnswer(p.Stdout, event, *resp.Verdict)
	case event == "PreToolUse":
		return answerLocal(p, event, raw, fmt.Errorf("the daemon gave no verdict"))
	}
	return 0
}

// shapes are the events whose answer is not a PreToolUse's.
var shapes = map[string]bool{"PostToolUse": true, "PostToolUseFailure": true, "PostToolBatch": true,
	"PermissionRequest": true, "SessionEnd": true}

// parseFlags reads an installed hook's flags; it returns nil without them.
func parseFlags(p Process) (*api.InstalledHook, error) {
	fs := flag.NewFlagSet("toolgate-hook", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	policy := fs.String("policy", "", "the policy of sessions this installed hook gates")
	timeout := fs.Duration("approval-timeout", DefaultApprovalTimeout, "how long a PermissionRequest waits for a person")
	if err := fs.Parse(p.Args); err != nil {
		return nil, fmt.Errorf("bad arguments (reinstall with toolgate install): %w", err)
	}
	if *policy == "" {
		if len(p.Args) > 0 {
			return nil, fmt.Errorf("bad arguments %q (reinstall with toolgate install)", p.Args)
		}
		return nil, nil
	}
	if *timeout <= 0 {
		return nil, fmt.Errorf("--approval-timeout must be positive")
	}
	pid, _ := strconv.Atoi(p.Getenv("CLAUDE_PID"))
	return &api.InstalledHook{PolicyPath: *policy, ApprovalTimeout: api.Duration(*timeout), ClaudePID: pid,
		Home: p.Getenv("HOME")}, nil
}

// ask forwards the event to the daemon. An installed hook that finds no
// daemon starts one and asks again.
func ask(p Process, event string, req api.HookRequest) (api.HookResponse, error) {
	timeout := Timeout
	if event == "PermissionRequest" && req.Installed != nil {
		timeout = time.Duration(req.Installed.ApprovalTimeout) + PermissionMargin
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client := api.NewClient(socketPath(p.Getenv))
	resp, err := client.Hook(ctx, req)
	if err == nil || !api.IsUnavailable(err) || req.Installed == nil || p.StartDaemon == nil {
		return resp, err
	}
	if serr := p.StartDaemon(ctx); serr != nil {
		return resp, fmt.Errorf("%w; starting one failed: %v", err, serr)
	}
	return client.Hook(ctx, req)
}

func socketPath(getenv func(string) string) string {
	if s := getenv("TOOLGATE_SOCKET"); s != "" {
		return s
	}
	return filepath.Join(api.RuntimeDir(getenv), api.SocketName)
}

// unavailable is the verdict when the daemon cannot decide.
func unavailable() api.Verdict {
	v := api.Verdict{Effect: api.Deny, ReasonCode: api.ReasonGateUnavailable, Source: api.SourceGate}
	v.Message = api.DenyMessage(v, "")
	return v
}

// answerLocal answers without the daemon: a PreToolUse is denied
// gate_unavailable, and a PermissionRequest gets no answer (Claude Code's
// own dialog decides, or -p denies); every event is recorded in the spool
// file, so that the supervisor's report and a later audit know about it.
func answerLocal(p Process, event string, raw []byte, cause error) int {
	fmt.Fprintf(p.Stderr, "toolgate-hook: %v\n", cause)
	spool(spoolPath(p.Getenv, raw), event, raw, cause)
	if event == "PreToolUse" {
		writeAnswer(p.Stdout, event, unavailable())
	}
	return 0
}

// spoolPath is TOOLGATE_SPOOL, or for an installed hook the spool file of
// Claude Code's session in the runtime directory.
func spoolPath(getenv func(string) string, raw []byte) string {
	if s := getenv("TOOLGATE_SPOOL"); s != "" || getenv("TOOLGATE_SESSION") != "" {
		return s
	}
	session := gjson.GetBytes(raw, "session_id").Str
	if session == "" || strings.ContainsAny(session, `/\.`) || len(session) > 128 {
		return ""
	}
	return filepath.Join(api.RuntimeDir(getenv), "spool", session+".jsonl")
}

// spool appends one JSON line about an event the daemon did not get.
func spool(path, event string, raw []byte, cause error) {
	if path == "" {
		return
	}
	line, _ := sjson.SetBytes(nil, "time", time.Now().UTC().Format(time.RFC3339Nano))
	line, _ = sjson.SetBytes(line, "hook_event_name", event)
	line, _ = sjson.SetBytes(line, "reason_code", api.ReasonGateUnavailable)
	line, _ = sjson.SetBytes(line, "error", cause.Error())
	for _, key := range []string{"tool_use_id", "tool_name", "agent_id"} {
		if v := gjson.GetBytes(raw, key); v.Type == gjson.String {
			line, _ = sjson.SetBytes(line, key, v.Str)
		}
	}
	// The input too, when it is small, so that the daemon can put the call
	// in the audit once it is back.
	if in := gjson.GetBytes(raw, "tool_input"); in.IsObject() && len(in.Raw) <= maxSpooledInput {
		line, _ = sjson.SetRawBytes(line, "tool_input", []byte(in.Raw))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if errors.Is(err, fs.ErrNotExist) && os.MkdirAll(filepath.Dir(path), 0o700) == nil {
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600) // no daemon ever ran here
	}
	if err != nil {
		return
	}
	f.Write(append(line, '\n')) // one write: lines of concurrent hooks do not interleave
	f.Close()
}

// writeAnswer prints the answer to an event. A PreToolUse always gets an
// explicit decision, so that no other hook can loosen it (Claude Code
// combines hooks as deny > defer > ask > allow). A PermissionRequest gets
// allow (with the input to run) or deny, or nothing when toolgate hands
// it to Claude Code's dialog. Other events get no output.
func writeAnswer(w io.Writer, event string, v api.Verdict) {
	var out []byte
	switch event {
	case "PreToolUse":
		out = preToolUseAnswer(v)
	case "PermissionRequest":
		out = permissionAnswer(v)
	}
	if out == nil {
		return
	}
	w.Write(bytes.TrimSpace(out))
	io.WriteString(w, "\n")
}

func preToolUseAnswer(v api.Verdict) []byte {
	out, _ := sjson.SetBytes(nil, "hookSpecificOutput.hookEventName", "PreToolUse")
	switch v.Effect {
	case api.Allow:
		out, _ = sjson.SetBytes(out, "hookSpecificOutput.permissionDecision", "allow")
		out, _ = sjson.SetBytes(out, "hookSpecificOutput.permissionDecisionReason", "allowed by toolgate"+ruleSuffix(v))
	case api.Ask:
		out, _ = sjson.SetBytes(out, "hookSpecificOutput.permissionDecision", "ask")
		out, _ = sjson.SetBytes(out, "hookSpecificOutput.permissionDecisionReason", "toolgate asks for approval"+ruleSuffix(v))
	default:
		out, _ = sjson.SetBytes(out, "hookSpecificOutput.permissionDecision", "deny")
		out, _ = sjson.SetBytes(out, "hookSpecificOutput.permissionDecisionReason", denyText(v))
	}
	return out
}

func permissionAnswer(v api.Verdict) []byte {
	out, _ := sjson.SetBytes(nil, "hookSpecificOutput.hookEventName", "PermissionRequest")
	switch v.Effect {
	case api.Allow:
		out, _ = sjson.SetBytes(out, "hookSpecificOutput.decision.behavior", "allow")
		if gjson.ValidBytes(v.Input) && gjson.ParseBytes(v.Input).IsObject() {
			// Always the input itself: older CLIs refused an allow without it.
			out, _ = sjson.SetRawBytes(out, "hookSpecificOutput.decision.updatedInput", v.Input)
		}
	case api.Deny:
		out, _ = sjson.SetBytes(out, "hookSpecificOutput.decision.behavior", "deny")
		out, _ = sjson.SetBytes(out, "hookSpecificOutput.decision.message", denyText(v))
	default:
		return nil
	}
	return out
}

func denyText(v api.Verdict) string {
	if v.Message != "" {
		return v.Message
	}
	return api.DenyMessage(v, "")
}

func ruleSuffix(v api.Verdict) string {
	if v.RuleID == "" {
		return " (reason_code " + v.ReasonCode + ")"
	}
	return " (rule " + v.RuleID + ")"
}
