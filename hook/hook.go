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
// It may import only the api, client, paths, spool and claudecode
// packages, gjson, sjson, Landlock and the standard library (a test
// enforces it).
//
// Environment:
//
//	TOOLGATE_SESSION      the session id (set by toolgate run)
//	TOOLGATE_SOCKET       the daemon's socket (set by toolgate run; else
//	                      that of the daemon serving the ledger, see paths.From)
//	TOOLGATE_SPOOL        a file where calls denied without the daemon are recorded
//	TOOLGATE_CONTAINED    1 when toolgate run contains the session: the daemon
//	                      must then run outside its Landlock domain
//	TOOLGATE_DAEMON_EXE   the daemon's executable (default: toolgate beside
//	                      the hook); a verdict from any other is refused
//	CLAUDE_PID, HOME      (set by Claude Code) the session's claude and home
package hook

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/claudecode"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/paths"
	"github.com/toolgate/toolgate/spool"
)

// MaxEvent bounds a hook event, on stdin or in an http hook's request. A
// larger one is denied.
const MaxEvent = 8 << 20

// ReadEvent reads one hook event, whichever way it comes (the hook
// binary's stdin, toolgate run's http endpoint): at most MaxEvent bytes of
// valid JSON. On an error the event is to be denied; a read that broke
// returns what came before, for the spool.
func ReadEvent(r io.Reader) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r, MaxEvent+1))
	switch {
	case err != nil:
		return raw, fmt.Errorf("read the event: %w", err)
	case len(raw) > MaxEvent:
		return nil, fmt.Errorf("the event is larger than %d bytes", MaxEvent)
	case !gjson.ValidBytes(raw):
		return nil, errors.New("the event is not valid JSON")
	}
	return raw, nil
}

// Timeout bounds the round trip to the daemon: the hook must answer well
// before the timeout Claude Code gives it (30 s), or the CLI would treat its
// silence as no verdict. A PermissionRequest waits for a person instead,
// for up to its approval timeout and PermissionMargin.
const Timeout = 10 * time.Second

// PermissionMargin is how much longer than its approval timeout a
// PermissionRequest may take: toolgate install sets the hook's own timeout
// in Claude Code's settings twice as far beyond it.
const PermissionMargin = 15 * time.Second

// Process is what Main needs of its process.
type Process struct {
	Args           []string // the arguments after the program's name
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// DaemonExe is the executable the daemon on gate.sock must run (the
	// toolgate binary): a verdict from any other process is refused.
	DaemonExe string
	// StartDaemon starts the daemon when an installed hook finds none; nil
	// never starts one.
	StartDaemon func(ctx context.Context) error
}

// Main runs the hook and returns its exit status, which is always 0.
func Main(p Process) (code int) {
	event := api.PreToolUse
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(p.Stderr, "toolgate-hook: internal error: %v\n", r)
			writeAnswer(p.Stdout, event, api.Deny(api.ReasonGateUnavailable, api.SourceGate))
		}
	}()
	raw, err := ReadEvent(p.Stdin)
	if err != nil {
		return answerLocal(p, event, raw, err)
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
	case resp.Defer && event == api.PreToolUse && resp.Verdict != nil:
		p.Stdout.Write(claudecode.Defer(*resp.Verdict))
	case resp.Verdict != nil:
		writeAnswer(p.Stdout, event, *resp.Verdict)
	case event == api.PreToolUse:
		return answerLocal(p, event, raw, fmt.Errorf("the daemon gave no verdict"))
	}
	return 0
}

// shapes are the events whose answer is not a PreToolUse's.
var shapes = map[string]bool{api.PostToolUse: true, api.PostToolUseFailure: true, api.PostToolBatch: true,
	api.PermissionRequest: true, api.SessionEnd: true}

// parseFlags reads an installed hook's flags; it returns nil without them.
func parseFlags(p Process) (*api.InstalledHook, error) {
	policy, timeout, err := parseArgs(p.Args)
	if err != nil || policy == "" {
		return nil, err
	}
	pid, _ := strconv.Atoi(p.Getenv("CLAUDE_PID"))
	claudeDir := p.Getenv("CLAUDE_CONFIG_DIR")
	if claudeDir == "" && p.Getenv("HOME") != "" {
		claudeDir = filepath.Join(p.Getenv("HOME"), ".claude")
	}
	return &api.InstalledHook{PolicyPath: policy, ApprovalTimeout: api.Duration(timeout), ClaudePID: pid,
		Home: p.Getenv("HOME"), ClaudeDir: claudeDir}, nil
}

// CheckArgs reports whether the hook runs as the hook with args: none (as
// toolgate run's hook), or an installed hook's flags. Any other arguments
// it refuses, with a deny, and its contain mode is not the hook at all: run
// counts a settings hook as its own only when CheckArgs accepts it.
func CheckArgs(args []string) error {
	_, _, err := parseArgs(args)
	return err
}

// parseArgs reads the hook's arguments: policy is "" without an installed
// hook's flags.
func parseArgs(args []string) (policy string, timeout time.Duration, err error) {
	fs := flag.NewFlagSet("toolgate-hook", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&policy, "policy", "", "the policy of sessions this installed hook gates")
	fs.DurationVar(&timeout, "approval-timeout", api.DefaultInstalledApprovalTimeout, "how long a PermissionRequest waits for a person")
	if err := fs.Parse(args); err != nil {
		return "", 0, fmt.Errorf("bad arguments (reinstall with toolgate install): %w", err)
	}
	switch {
	case fs.NArg() > 0 || policy == "" && len(args) > 0:
		return "", 0, fmt.Errorf("bad arguments %q (reinstall with toolgate install)", args)
	case policy != "" && timeout <= 0:
		return "", 0, fmt.Errorf("--approval-timeout must be positive")
	}
	return policy, timeout, nil
}

// ask forwards the event to the daemon. An installed hook that finds no
// daemon starts one and asks again, unless the request reached one: the
// daemon may have recorded it (an execution) before its connection broke.
func ask(p Process, event string, req api.HookRequest) (api.HookResponse, error) {
	timeout := Timeout
	if event == api.PermissionRequest && req.Installed != nil {
		timeout = time.Duration(req.Installed.ApprovalTimeout) + PermissionMargin
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	body, err := requestBody(req)
	if err != nil {
		return api.HookResponse{}, err
	}
	c := client.NewClient(socketPath(p.Getenv))
	c.VerifyPeer = client.Trust{Exe: p.DaemonExe, Contained: p.Getenv("TOOLGATE_CONTAINED") == "1"}.Verify
	answer, err := c.HookJSON(ctx, body)
	if err != nil && client.NeverSent(err) && req.Installed != nil && p.StartDaemon != nil {
		if serr := p.StartDaemon(ctx); serr != nil {
			return api.HookResponse{}, fmt.Errorf("%w; starting one failed: %v", err, serr)
		}
		answer, err = c.HookJSON(ctx, body)
	}
	if err != nil {
		return api.HookResponse{}, err
	}
	return parseResponse(answer)
}

func socketPath(getenv func(string) string) string {
	if s := getenv("TOOLGATE_SOCKET"); s != "" {
		return s
	}
	return paths.From(getenv).LiveWith(parseDaemonRecord).Socket()
}

// answerLocal answers without the daemon: a PreToolUse is denied
// gate_unavailable, and a PermissionRequest gets no answer (Claude Code's
// own dialog decides, or -p denies); every event is recorded in the spool
// file, so that the supervisor's report and a later audit know about it.
func answerLocal(p Process, event string, raw []byte, cause error) int {
	fmt.Fprintf(p.Stderr, "toolgate-hook: %v\n", cause)
	spoolEvent(spoolPath(p.Getenv, raw), event, raw, cause)
	if event == api.PreToolUse {
		writeAnswer(p.Stdout, event, api.Deny(api.ReasonGateUnavailable, api.SourceGate))
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
	return paths.From(getenv).LiveWith(parseDaemonRecord).SpoolFile(session)
}

// spoolEvent records an event the daemon did not get in the session's spool
// file, with the input when it is small, so that the daemon can put the
// call in the audit once it is back.
func spoolEvent(path, event string, raw []byte, cause error) {
	if path == "" {
		return
	}
	spool.Append(path, spool.Unanswered(event, raw, api.ReasonGateUnavailable, cause)) // nowhere to report a failure: the deny stands
}

// writeAnswer prints the answer to an event (claudecode.Answer).
func writeAnswer(w io.Writer, event string, v api.Verdict) {
	out := claudecode.Answer(event, v)
	if out == nil {
		return
	}
	w.Write(append(bytes.TrimSpace(out), '\n')) // one write: the reader wakes once
}
