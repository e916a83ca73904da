// Package hook is the logic of toolgate-hook, the lean binary Claude Code
// spawns for every hook event: it reads one event on stdin, forwards it raw
// to the daemon with the session id, and prints the answer the way Claude
// Code expects it. It never opens the ledger and never evaluates policy.
//
// Its exit contract lives in Main: the answer is always JSON on stdout with
// exit status 0. A deny is the JSON deny (exit 2 would show the hook's
// command line to the model), and anything that goes wrong (no daemon, a
// malformed event, an internal error, a panic) is a deny with reason_code
// gate_unavailable: Claude Code treats a crash, bad output or a timeout as
// "no verdict" and would let an auto-allowed call run.
//
// It may import only this package's dependencies: the api package, gjson,
// sjson and the standard library (a test enforces it).
//
// Environment (set by toolgate run):
//
//	TOOLGATE_SESSION  the session id
//	TOOLGATE_SOCKET   the daemon's socket
//	TOOLGATE_SPOOL    a file where calls denied without the daemon are recorded
package hook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
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
// before the timeout Claude Code gives it (toolgate run sets 30 s), or the
// CLI would treat its silence as no verdict.
const Timeout = 10 * time.Second

// Env is how the hook reads its environment (os.Getenv in production).
type Env func(string) string

// Main runs the hook and returns its exit status, which is always 0.
func Main(stdin io.Reader, stdout, stderr io.Writer, env Env) (code int) {
	event := "PreToolUse"
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "toolgate-hook: internal error: %v\n", r)
			writeAnswer(stdout, event, unavailable())
		}
	}()
	raw, err := io.ReadAll(io.LimitReader(stdin, MaxEvent+1))
	switch {
	case err != nil:
		return answerLocal(stdout, stderr, env, event, raw, fmt.Errorf("read the event: %w", err))
	case len(raw) > MaxEvent:
		return answerLocal(stdout, stderr, env, event, nil, fmt.Errorf("the event is larger than %d bytes", MaxEvent))
	}
	if !gjson.ValidBytes(raw) {
		return answerLocal(stdout, stderr, env, event, nil, fmt.Errorf("the event is not valid JSON"))
	}
	// Only the events after a call go unanswered; anything else, a
	// PreToolUse or an event that is not what it should be, gets a verdict.
	if name := gjson.GetBytes(raw, "hook_event_name"); name.Type == gjson.String && afterCall[name.Str] {
		event = name.Str
	}
	session, socket := env("TOOLGATE_SESSION"), env("TOOLGATE_SOCKET")
	if session == "" || socket == "" {
		return answerLocal(stdout, stderr, env, event, raw, fmt.Errorf("TOOLGATE_SESSION and TOOLGATE_SOCKET are not set: run claude through toolgate run"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	client := api.NewClient(socket)
	resp, err := client.Hook(ctx, api.HookRequest{SessionID: session, Event: raw})
	if err != nil {
		return answerLocal(stdout, stderr, env, event, raw, err)
	}
	switch {
	case resp.Verdict != nil:
		writeAnswer(stdout, event, *resp.Verdict)
	case event == "PreToolUse":
		return answerLocal(stdout, stderr, env, event, raw, fmt.Errorf("the daemon gave no verdict"))
	}
	return 0
}

// afterCall are the events that come after a call ran (or was denied):
// they are recorded, never answered.
var afterCall = map[string]bool{"PostToolUse": true, "PostToolUseFailure": true, "PostToolBatch": true}

// unavailable is the verdict when the daemon cannot decide.
func unavailable() api.Verdict {
	v := api.Verdict{Effect: api.Deny, ReasonCode: api.ReasonGateUnavailable, Source: api.SourceGate}
	v.Message = api.DenyMessage(v, "")
	return v
}

// answerLocal answers without the daemon: a PreToolUse is denied
// gate_unavailable; every event is recorded in the spool file, so that the
// supervisor's report and a later audit know about it.
func answerLocal(stdout, stderr io.Writer, env Env, event string, raw []byte, cause error) int {
	fmt.Fprintf(stderr, "toolgate-hook: %v\n", cause)
	spool(env("TOOLGATE_SPOOL"), event, raw, cause)
	if event == "PreToolUse" {
		writeAnswer(stdout, event, unavailable())
	}
	return 0
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
	if err != nil {
		return
	}
	f.Write(append(line, '\n')) // one write: lines of concurrent hooks do not interleave
	f.Close()
}

// writeAnswer prints the answer to a PreToolUse event: always an explicit
// decision, so that no other hook can loosen it (Claude Code combines
// hooks as deny > defer > ask > allow). Other events get no output.
func writeAnswer(w io.Writer, event string, v api.Verdict) {
	if event != "PreToolUse" {
		return
	}
	out, _ := sjson.SetBytes(nil, "hookSpecificOutput.hookEventName", "PreToolUse")
	switch v.Effect {
	case api.Allow:
		out, _ = sjson.SetBytes(out, "hookSpecificOutput.permissionDecision", "allow")
		out, _ = sjson.SetBytes(out, "hookSpecificOutput.permissionDecisionReason", "allowed by toolgate"+ruleSuffix(v))
	case api.Ask:
		out, _ = sjson.SetBytes(out, "hookSpecificOutput.permissionDecision", "ask")
		out, _ = sjson.SetBytes(out, "hookSpecificOutput.permissionDecisionReason", "toolgate asks for approval"+ruleSuffix(v))
	default:
		msg := v.Message
		if msg == "" {
			msg = api.DenyMessage(v, "")
		}
		out, _ = sjson.SetBytes(out, "hookSpecificOutput.permissionDecision", "deny")
		out, _ = sjson.SetBytes(out, "hookSpecificOutput.permissionDecisionReason", msg)
	}
	w.Write(bytes.TrimSpace(out))
	io.WriteString(w, "\n")
}

func ruleSuffix(v api.Verdict) string {
	if v.RuleID == "" {
		return " (reason_code " + v.ReasonCode + ")"
	}
	return " (rule " + v.RuleID + ")"
}
