package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/claudecode"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/hook"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/spool"
)

// Hook transports: how Claude Code hands toolgate run each call (HookAuto
// picks one).
const (
	// HookHTTP: an http hook to run's own loopback listener (the prompt
	// tool's), which forwards the event to the daemon over a kept
	// connection. Claude Code sends one request a call and spawns nothing.
	HookHTTP = "http"
	// HookCommand: toolgate-hook, spawned by Claude Code for every event,
	// which asks the daemon itself (what installed sessions use).
	HookCommand = "command"
)

// HookAuto picks HookHTTP, unless Claude Code's sandbox may be on, or the
// claude executable is older than claudecode.TranscriptRanSince (or its
// version cannot be told): then HookCommand (see hookTransport).
const HookAuto = "auto"

// hookTransport is the transport a session uses. Claude Code sends http
// hooks through its sandbox's network proxy when the sandbox is on, and
// the proxy refuses loopback addresses: every hook would fail, and a
// failed hook lets the call through. So with the sandbox on (a settings
// layer that turns it on) the hook is the command; asked for http there,
// run refuses to start. (toolgate's own boundary sends nothing through a
// proxy: --containment strict cuts the network of Bash commands, not
// claude's.)
func hookTransport(cfg RunConfig) (string, error) {
	sandbox, where := claudecode.SandboxEnabled(cfg.ClaudeArgs, cfg.Cwd, claudeDir(cfg))
	// What ran comes from the transcript with http hooks: only a release
	// whose transcript says so will do.
	version, known := claudecode.InstalledVersion(cfg.Claude)
	tells := known && claudecode.AtLeast(version, claudecode.TranscriptRanSince)
	switch cfg.HookTransport {
	case "", HookAuto:
		if sandbox || !tells {
			return HookCommand, nil
		}
		return HookHTTP, nil
	case HookHTTP:
		if sandbox {
			return "", &claudecode.ArgsError{Msg: fmt.Sprintf("--hook-transport http cannot gate a session with Claude Code's sandbox on (%s): "+
				"the sandbox's proxy refuses the hooks, and Claude Code lets a call through a hook that fails; use --hook-transport command", where)}
		}
		if !tells {
			this := "its version cannot be told from where it is installed"
			if known {
				this = "this is " + version
			}
			return "", &claudecode.ArgsError{Msg: fmt.Sprintf("--hook-transport http needs Claude Code %s or later (%s): run learns which calls ran from the transcript, "+
				"which says so only from that release on; use --hook-transport command (or auto)", claudecode.TranscriptRanSince, this)}
		}
		return HookHTTP, nil
	case HookCommand:
		return HookCommand, nil
	}
	return "", &claudecode.ArgsError{Msg: fmt.Sprintf("--hook-transport must be %s, %s or %s, not %q", HookAuto, HookHTTP, HookCommand, cfg.HookTransport)}
}

// noProxyLoopback is claude's NO_PROXY with the loopback address added:
// Claude Code sends an http hook through a proxy its environment names
// (or a settings layer's env, which can change during the session), unless
// NO_PROXY exempts its URL, and a proxy would neither reach run's listener
// nor should see its token. It returns env with NO_PROXY and no_proxy set
// to it.
func noProxyLoopback(env []string) ([]string, string) {
	list := "127.0.0.1"
	for i := len(env) - 1; i >= 0; i-- {
		k, v, _ := strings.Cut(env[i], "=")
		if strings.EqualFold(k, "NO_PROXY") {
			if v != "" && v != list {
				list = v + "," + list
			}
			break
		}
	}
	return append(env, "NO_PROXY="+list, "no_proxy="+list), list
}

// HookDeadline is how long run's http hook endpoint works on a verdict
// (the settings check, the daemon's answer) before it answers deny
// gate_unavailable itself: well before the timeout Claude Code gives the
// hook (claudecode.HookTimeout), after which the CLI would treat the call
// as having no verdict and let an auto-allowed call run.
const HookDeadline = 10 * time.Second

// hookServer is toolgate run's http hook endpoint. Claude Code lets a call
// through whenever an http hook fails (a refused connection, an HTTP error,
// a body it cannot read, no answer before the hook's timeout, as observed on
// the pinned release),
// so the endpoint answers every request with 200 and a JSON verdict, and
// nothing else: the daemon's verdict, or a deny gate_unavailable when the
// daemon cannot be reached or is not the one run trusts, when anything
// keeps the verdict past the deadline, and when the request is not Claude
// Code's (no token, or a connection claude does not hold), is not a
// PreToolUse event, or cannot be read. A request can only propose a call:
// the verdict is the daemon's, and it answers Claude Code's own request
// alone.
type hookServer struct {
	r          *runner
	authorized func(*http.Request) bool // the request carries the listener's token
	fromClaude func(*http.Request) bool // claude holds the other end of its connection
	deadline   time.Duration
	transcript func(path string) // told every transcript_path (claude's transcripts)
}

// ServeHTTP answers one hook request: always 200, always a verdict.
func (h *hookServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	v, deferred := api.Deny(api.ReasonGateUnavailable, api.SourceGate), false
	defer func() {
		if p := recover(); p != nil {
			h.r.log.Error("http hook: internal error", "panic", p)
			v, deferred = api.Deny(api.ReasonGateUnavailable, api.SourceGate), false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		if deferred {
			// --on-ask defer: the run ends on this call, as the hook
			// binary's "defer" ends it.
			w.Write(claudecode.Defer(v))
			return
		}
		w.Write(claudecode.Answer(api.PreToolUse, v))
	}()
	if !h.authorized(req) {
		// Not Claude Code's: its body is not read (it could be endless),
		// and the connection is closed after the deny.
		h.r.log.Warn("http hook: a request without the token", "remote", req.RemoteAddr)
		w.Header().Set("Connection", "close")
		return
	}
	if !h.fromClaude(req) {
		// The token is Claude Code's, the connection another process's:
		// one that read the token (the model's code reads what claude
		// reads) and sends events of its own. Nothing of it reaches the
		// daemon: it could take a tool_use_id before claude proposes it.
		h.r.log.Warn("http hook: a request with the token from a process other than claude", "remote", req.RemoteAddr)
		h.r.notClaude.Add(1)
		w.Header().Set("Connection", "close")
		return
	}
	raw, err := readHookBody(req)
	if err != nil {
		h.localDeny(raw, err)
		return
	}
	v, deferred = h.decideBy(req.Context(), raw)
	if v.Effect == api.EffectAsk && !deferred {
		v = h.await(req.Context(), raw, v)
	}
}

// await holds Claude Code's hook request while a person decides the ask v
// names (the daemon made the approval), and returns the decision: what
// the person said, or the gate's deny when nobody decided in time or the
// session was stopped. Claude Code waits for it (run gives the hook the
// timeout AskTimeout says, past the approval's expiry). A daemon that went
// away is started again and asked about the same approval; when it cannot
// be, the call is denied gate_unavailable.
func (h *hookServer) await(ctx context.Context, raw []byte, v api.Verdict) api.Verdict {
	req := proposalOf(raw)
	if v.ApprovalID == "" {
		v = h.localDeny(raw, errors.New("the daemon asked without an approval"))
		h.r.saw(req, v)
		return v
	}
	h.r.announce(req, v)
	// The daemon's expiry answers first; a daemon that does not is
	// answered for before Claude Code stops waiting (askMargin after the
	// longest approval's expiry), which would be no verdict at all.
	deadline := time.Now().Add(h.r.askTimeout - askMargin/2)
	if v.ExpiresAt != nil && v.ExpiresAt.Add(askMargin/2).Before(deadline) {
		deadline = v.ExpiresAt.Add(askMargin / 2)
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for attempt := 0; ; attempt++ {
		got, err := h.r.client.Wait(ctx, v.ApprovalID)
		if err == nil {
			h.r.decided(v.ApprovalID, got)
			h.r.saw(req, got)
			return got
		}
		if ctx.Err() == nil && client.IsUnavailable(err) && attempt < 3 && h.r.gate.Lost() == nil && h.r.gate.restart(ctx) {
			continue // the daemon is back, with the same approval
		}
		v = h.localDeny(raw, fmt.Errorf("wait for approval %s: %w", v.ApprovalID, err))
		h.r.saw(req, v)
		return v
	}
}

// decideBy is decide's verdict, or a deny gate_unavailable once the
// deadline has passed, whatever holds decide up (the daemon, a file that
// never reads): Claude Code must have an answer before its own timeout.
// What run answered to a call it asked the daemon about, or gave up on,
// is kept for the report: it checks the daemon's record against it, and
// holds it when the record cannot be had.
func (h *hookServer) decideBy(ctx context.Context, raw []byte) (api.Verdict, bool) {
	ctx, cancel := context.WithTimeout(ctx, h.deadline)
	defer cancel()
	done := make(chan decision, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				h.r.log.Error("http hook: internal error", "panic", p)
				done <- decision{v: h.localDeny(raw, fmt.Errorf("internal error: %v", p))}
			}
		}()
		done <- h.decide(ctx, raw)
	}()
	var d decision
	select {
	case d = <-done:
	case <-ctx.Done():
		d = decision{v: h.localDeny(raw, fmt.Errorf("no verdict within %s", h.deadline)), asked: true}
	}
	if d.asked {
		h.r.saw(proposalOf(raw), d.v)
	}
	return d.v, d.deferred
}

// proposalOf is the call a PreToolUse event proposes, as run keeps what it
// answered for it (runner.saw).
func proposalOf(raw []byte) proposal {
	ev := gjson.ParseBytes(raw)
	return proposal{ToolUseID: ev.Get("tool_use_id").Str, ToolName: ev.Get("tool_name").Str,
		Input: json.RawMessage(ev.Get("tool_input").Raw)}
}

// decision is a verdict of the endpoint's: deferred says the daemon
// defers the call (--on-ask defer), asked that the daemon was asked.
type decision struct {
	v        api.Verdict
	deferred bool
	asked    bool
}

// readHookBody reads the event as the hook binary reads its stdin
// (hook.ReadEvent), and drains the rest: Claude Code must read an answer,
// not a connection closed while it still sends.
func readHookBody(req *http.Request) ([]byte, error) {
	raw, err := hook.ReadEvent(req.Body)
	io.Copy(io.Discard, req.Body)
	return raw, err
}

// decide asks the daemon for the verdict on one PreToolUse event, within
// the deadline, restarting a daemon that is gone once.
func (h *hookServer) decide(ctx context.Context, raw []byte) decision {
	ev := gjson.ParseBytes(raw)
	if name := ev.Get("hook_event_name").Str; name != api.PreToolUse {
		return decision{v: h.localDeny(raw, fmt.Errorf("unexpected hook event %q", name))}
	}
	if err := h.r.settingsChanged(); err != nil {
		// Another hook may be answering allow with another input beside
		// this one: deny beats it, and the session stops.
		h.r.stopSession(err)
		return decision{v: h.localDeny(raw, err)}
	}
	if p := ev.Get("transcript_path").Str; p != "" && h.transcript != nil {
		h.transcript(p)
	}
	// A skill, agent or command the session's own commands wrote would
	// bring hooks that run outside the boundary: a call that could load
	// one is denied once the session made one (sweep), and a file tool's
	// call beside one the session made moves it aside first (beside):
	// Claude Code finds the skills of the directories it works in.
	if made := h.r.made; made != nil {
		moved := ""
		if loadsConfig[ev.Get("tool_name").Str] {
			moved = made.sweep()
		} else if in := ev.Get("tool_input"); in.IsObject() {
			for _, key := range policy.PathKeys {
				if moved = made.beside(in.Get(key).Str); moved != "" {
					break
				}
			}
		}
		if moved != "" {
			v := api.Deny(api.ReasonToolgateGuard, api.SourceGate)
			v.Message = api.DenyMessage(v, moved)
			return decision{v: h.denyWith(raw, v, errors.New(moved))}
		}
	}
	v, deferred := h.ask(ctx, raw)
	return decision{v, deferred, true}
}

// ask is the daemon's verdict, or a local deny.
func (h *hookServer) ask(ctx context.Context, raw []byte) (api.Verdict, bool) {
	if err := h.r.gate.Lost(); err != nil {
		return h.localDeny(raw, err), false
	}
	if err := h.r.stopped(); err != nil {
		return h.localDeny(raw, err), false
	}
	ctx, cancel := context.WithTimeout(ctx, h.deadline)
	defer cancel()
	req := api.HookRequest{SessionID: h.r.session, Event: raw}
	resp, err := h.r.client.Hook(ctx, req)
	if err != nil && client.IsUnavailable(err) && ctx.Err() == nil && h.r.gate.restart(ctx) {
		resp, err = h.r.client.Hook(ctx, req)
	}
	switch {
	case err != nil:
		return h.localDeny(raw, err), false
	case resp.Verdict == nil:
		return h.localDeny(raw, errors.New("the daemon gave no verdict")), false
	}
	return *resp.Verdict, resp.Defer
}

// localDeny denies a call without the daemon, and records it in the spool
// as the hook binary does: the report counts it, and the daemon puts it in
// the audit when it can.
func (h *hookServer) localDeny(raw []byte, cause error) api.Verdict {
	return h.denyWith(raw, api.Deny(api.ReasonGateUnavailable, api.SourceGate), cause)
}

// denyWith answers v, a deny run decides itself, and spools it for the
// daemon's record.
func (h *hookServer) denyWith(raw []byte, v api.Verdict, cause error) api.Verdict {
	h.r.log.Error("http hook: denied "+v.ReasonCode, "err", cause)
	if line := spool.Unanswered(api.PreToolUse, raw, v.ReasonCode, cause); line.ToolUseID != "" {
		spool.Append(h.r.spool, line) // nowhere to report a failure: the deny stands
	}
	return v
}
