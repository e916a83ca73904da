package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/proc"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/paths"
	"github.com/toolgate/toolgate/policy"
)

// Sessions of Claude Code's own, gated by the hook toolgate install puts in
// its settings: no toolgate run registers them, so the daemon does on their
// first event, under Claude Code's session_id.

// installed returns the session of an installed hook's event, registering
// it on first sight with the policy the hook names. The session's claude is
// the pid the hook reports when it is an ancestor of the calling hook, so
// that nothing the session starts can approve its calls; a resumed session
// (a new claude, or an ended session) is opened again, under the policy
// its hook names.
//
// Session ids are no secret (Claude Code writes them to files as a session
// starts), so the event of another process naming a session is no proof:
// while the session's claude lives and Claude Code's own record of it
// (~/.claude/sessions/PID.json) names the session, only its hooks speak for
// it. A process that named the session first, with a claude of its own,
// holds it only until the session's own hook comes, and each hook's events
// are decided under the policy that hook names.
func (ss *sessions) installed(ctx context.Context, raw []byte, in api.InstalledHook, callerPID int) (*gateSession, error) {
	if !gjson.ValidBytes(raw) {
		return nil, fmt.Errorf("%w: not JSON", errBadEvent)
	}
	ev := gjson.ParseBytes(raw)
	id := ev.Get("session_id").String()
	if id == "" || len(id) > 128 || strings.ContainsAny(id, "/\\ ") || strings.HasPrefix(id, "ses_") {
		return nil, fmt.Errorf("%w: a Claude Code session_id is required", errBadEvent)
	}
	ss.installMu.Lock() // one registration at a time: parallel calls of a new session race here
	defer ss.installMu.Unlock()
	claude := claudeOf(callerPID, in.ClaudePID)
	s, err := ss.get(ctx, id)
	var rec api.Session
	if err == nil {
		rec = ss.record(s)
	}
	switch {
	case err == nil && !s.settings.Installed:
		return nil, fmt.Errorf("%w: session %s is a toolgate run session", errBadEvent, id)
	case err == nil && rec.ClaudePID != claude && rec.EndedAt == nil && proc.Alive(rec.ClaudePID) &&
		claudeRuns(rec.ClaudePID, id):
		return nil, &notOwnerError{session: id, claude: rec.ClaudePID, caller: callerPID}
	case err == nil && (rec.EndedAt != nil || rec.ClaudePID != claude):
		return ss.reopen(ctx, s, claude, in, ev.Get("cwd").String())
	case err == nil:
		return s, nil
	case !errors.Is(err, errUnknownSession):
		return nil, err
	}
	doc, err := paths.ReadRegular(in.PolicyPath, maxRequest)
	if err != nil {
		return nil, fmt.Errorf("read the policy of toolgate install's hook: %w", err)
	}
	settings := sessionSettings{PolicyName: in.PolicyPath, ApprovalTimeout: in.ApprovalTimeout, OnAsk: "wait",
		SessionContext: api.SessionContext{Home: in.Home}, Installed: true,
		Guard: ss.guardFor(ev.Get("cwd").String(), in.ClaudeDir, nil, in.PolicyPath)}
	return ss.start(ctx, api.Session{ID: id, ClaudeSessionID: id, Cwd: ev.Get("cwd").String(), ClaudePID: claude}, settings, doc)
}

// reopen records the claude of a resumed session and that it runs again,
// under the policy its hook names now.
func (ss *sessions) reopen(ctx context.Context, s *gateSession, claude int, in api.InstalledHook, cwd string) (*gateSession, error) {
	doc, err := paths.ReadRegular(in.PolicyPath, maxRequest)
	if err != nil {
		return nil, fmt.Errorf("read the policy of toolgate install's hook: %w", err)
	}
	settings := s.settings
	settings.PolicyName, settings.ApprovalTimeout, settings.Home = in.PolicyPath, in.ApprovalTimeout, in.Home
	settings.Guard = ss.guardFor(cwd, in.ClaudeDir, nil, in.PolicyPath)
	if settings.ApprovalTimeout <= 0 {
		settings.ApprovalTimeout = api.Duration(api.DefaultApprovalTimeout)
	}
	p, err := policy.Parse(settings.PolicyName, doc)
	if err != nil {
		return nil, err
	}
	if err := ss.ledger.StorePolicy(ctx, p.SHA256, doc); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(settings)
	if err != nil {
		return nil, err
	}
	rec, err := ss.ledger.UpdateSession(ctx, s.id, func(r *api.Session) {
		r.ClaudePID, r.EndedAt, r.EndReason = claude, nil, ""
		r.PolicySHA256, r.PolicyVersion, r.Settings = p.SHA256, p.Version, raw
	})
	if err != nil {
		return nil, err
	}
	// A new session object: a hook that holds the old one decides with it.
	fresh := newGateSession(rec, settings, p)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.byID[rec.ID] = fresh
	return fresh, nil
}

// claudeRuns reports whether Claude Code's record of the claude process pid
// (CONFIG/sessions/PID.json, written as a session starts, CONFIG being
// $CLAUDE_CONFIG_DIR or ~/.claude in that process's own environment: no
// request names it) names session.
func claudeRuns(pid int, session string) bool {
	if pid <= 1 {
		return false
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return false
	}
	var home, config string
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("HOME=")); ok {
			home = string(v)
		}
		if v, ok := bytes.CutPrefix(kv, []byte("CLAUDE_CONFIG_DIR=")); ok {
			config = string(v)
		}
	}
	if config == "" && home != "" {
		config = filepath.Join(home, ".claude")
	}
	data, err := paths.ReadRegular(filepath.Join(config, "sessions", strconv.Itoa(pid)+".json"), 1<<20)
	return err == nil && gjson.GetBytes(data, "sessionId").String() == session
}

// notOwnerError is an installed hook's event naming a session whose claude
// is another live process.
type notOwnerError struct {
	session        string
	claude, caller int
}

func (e *notOwnerError) Error() string {
	return fmt.Sprintf("session %s belongs to claude pid %d, which still runs; pid %d's event is not its hook's", e.session, e.claude, e.caller)
}

// claudeOf is the claude process of a calling hook: the pid the hook
// claims when it is one of its ancestors, else the hook's parent (or the
// parent of the shell Claude Code runs hooks with).
func claudeOf(callerPID, claimed int) int {
	if claimed > 1 && claimed != callerPID && descendsFrom(callerPID, map[int]bool{claimed: true}) {
		return claimed
	}
	parent, ok := proc.Parent(callerPID)
	if !ok {
		return 0
	}
	if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", parent)); shells[strings.TrimSpace(string(comm))] {
		if pp, ok := proc.Parent(parent); ok {
			return pp
		}
	}
	return parent
}

var shells = map[string]bool{"sh": true, "dash": true, "bash": true, "zsh": true}

// claims are the calls whose PermissionRequest a hook is waiting on: the
// event carries no tool_use_id, so two identical calls of one session
// (parallel reads of one file) must each find their own.
type claims struct {
	mu  sync.Mutex
	ids map[string]bool
}

// permissionRequest answers the PermissionRequest of an installed hook's
// session: it finds the ask it belongs to (the session's oldest undecided
// ask of the same tool and input that no other PermissionRequest holds),
// makes it an approval record and waits for a person. An allow carries the
// input to run; an ask verdict (handed_to_claude) means no answer: Claude
// Code's own dialog decides. A PermissionRequest toolgate did not ask for
// (a call the policy allowed that Claude Code still asks about, such as a
// write to its settings) gets no answer either.
func (g *gate) permissionRequest(ctx context.Context, s *gateSession, ev gjson.Result) (*api.Verdict, error) {
	if !s.settings.Installed {
		return nil, nil // toolgate run answers asks with its prompt tool
	}
	toolName, input := ev.Get("tool_name").String(), ev.Get("tool_input")
	if toolName == "" || !input.IsObject() {
		return nil, fmt.Errorf("%w: tool_name and an object tool_input are required", errBadEvent)
	}
	c, ok, err := g.claimAsk(ctx, s, toolName, json.RawMessage(input.Raw))
	if err != nil || !ok {
		return nil, err
	}
	defer g.release(c.ToolUseID)
	v, err := g.ask(ctx, s, c, c.Verdict)
	if err != nil || v.Effect != api.EffectAsk {
		return &v, err
	}
	id := v.ApprovalID
	v, err = g.wait(ctx, id)
	// A daemon that stops cannot answer the hook any more either: Claude
	// Code's own dialog decides, as when nobody decides in time.
	if errors.Is(err, errStillPending) || errors.Is(err, errStopping) {
		// The hook is gone before anyone decided: Claude Code's dialog
		// answered first, or the hook was stopped. Nothing decided now
		// could take effect, so the approval ends here.
		g.handOff(context.WithoutCancel(ctx), id, api.ActorHookGone)
	}
	return &v, err
}

// claimAsk finds the call of a PermissionRequest and holds it.
func (g *gate) claimAsk(ctx context.Context, s *gateSession, toolName string, input json.RawMessage) (api.Call, bool, error) {
	calls, err := g.ledger.Calls(ctx, ledger.CallQuery{SessionID: s.id})
	if err != nil {
		return api.Call{}, false, err
	}
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].ProposedAt.Before(calls[j].ProposedAt) })
	hash := ledger.InputSHA256(toolName, input)
	g.claims.mu.Lock()
	defer g.claims.mu.Unlock()
	for _, c := range calls {
		if c.ToolName != toolName || c.InputSHA256 != hash || c.Effect != api.EffectAsk ||
			c.Source == api.SourceClaude || c.Executions > 0 || g.claims.ids[c.ToolUseID] {
			continue
		}
		if g.claims.ids == nil {
			g.claims.ids = map[string]bool{}
		}
		g.claims.ids[c.ToolUseID] = true
		return c, true, nil
	}
	return api.Call{}, false, nil
}

func (g *gate) release(toolUseID string) {
	g.claims.mu.Lock()
	defer g.claims.mu.Unlock()
	delete(g.claims.ids, toolUseID)
}

// handOff ends a pending hand-off approval: its hook went away, or the
// call ran on an answer in Claude Code's own dialog (actor).
func (g *gate) handOff(ctx context.Context, approvalID, actor string) {
	a, _, err := g.ledger.HandOff(ctx, approvalID, actor)
	if err != nil {
		if !ledger.IsTerminal(err) {
			g.log.Error("hand off an approval", "approval", approvalID, "err", err)
		}
		return
	}
	g.log.Info("approval handed to Claude Code's dialog", "approval", a.ID, "tool_use_id", a.ToolUseID, "actor", actor)
	g.publish(ctx, api.EventExpired, a)
	g.broker.changed(a.ID)
	g.rearm()
}

// answeredInDialog closes the approval of a call that ran while toolgate's
// ask of it waited. In an installed session Claude Code's own dialog asks
// beside the PermissionRequest hook, and a person's Yes there runs the
// call without a word to the hook, which goes on waiting. Nothing decided
// in toolgate could take effect any more: the approval ends now, handed
// to Claude Code (actor claude:dialog), a later toolgate approve is
// refused, and the waiting hook is released with no answer.
func (g *gate) answeredInDialog(ctx context.Context, s *gateSession, toolUseID string) {
	if !s.settings.Installed {
		return
	}
	a, err := g.ledger.ApprovalFor(ctx, toolUseID)
	if err != nil || a.Status != api.StatusPending {
		return
	}
	g.handOff(ctx, a.ID, api.ActorClaudeDialog)
}

// sessionEnd ends an installed hook's session when Claude Code ends it.
func (g *gate) sessionEnd(ctx context.Context, s *gateSession) error {
	if !s.settings.Installed {
		return nil // toolgate run ends its own
	}
	_, err := g.endSession(ctx, s.id, api.EndEnded)
	return err
}
