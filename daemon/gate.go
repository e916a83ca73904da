package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/fleet"
	"github.com/toolgate/toolgate/internal/clip"
	"github.com/toolgate/toolgate/ledger"
)

// gate decides calls: the part of the daemon that the hook and the prompt
// tool talk to. The decision itself is the session's (policy.Session,
// pure); the gate records it, once per tool_use_id, and turns asks into
// approvals.
type gate struct {
	ledger   *ledger.Ledger
	sessions *sessions
	log      *slog.Logger
	broker   *broker
	rearmc   chan struct{} // wakes the expiry loop
	claims   claims        // the calls installed hooks' PermissionRequests wait on
	// stopping is closed when the daemon begins to stop: waits for a
	// person end then, and their approvals stay pending in the ledger.
	stopping chan struct{}
	fleet    *fleet.Node // the fleet's arbiter, when one is configured
}

// errBadEvent is a hook event the gate cannot use.
var errBadEvent = errors.New("malformed hook event")

// hook handles one hook event. PreToolUse gets a verdict; the events after
// a call are recorded and get none; an installed hook's PermissionRequest
// waits for a person, and its SessionEnd ends the session.
func (g *gate) hook(ctx context.Context, s *gateSession, raw []byte) (api.HookResponse, error) {
	if !gjson.ValidBytes(raw) {
		return api.HookResponse{}, fmt.Errorf("%w: not JSON", errBadEvent)
	}
	ev := gjson.ParseBytes(raw)
	switch name := ev.Get("hook_event_name").String(); name {
	case api.PreToolUse:
		c, err := callOf(ev)
		if err != nil {
			return api.HookResponse{}, err
		}
		v, err := g.decide(ctx, s, c, true)
		switch {
		case err != nil || v.Effect != api.EffectAsk || s.settings.Installed:
			// An installed session's ask goes on to Claude Code's dialog
			// and its PermissionRequest hook.
			return api.HookResponse{Verdict: &v}, err
		case s.settings.OnAsk == api.OnAskDefer:
			return g.deferAsk(ctx, s, c, v, ev.Get("session_id").String())
		}
		// toolgate run's ask becomes an approval now: its http hook waits
		// for the person (the verdict names the approval), and an
		// unattended session's is denied no_approver at once. The hook
		// binary answers ask, and the prompt tool finds the same approval.
		asked, err := g.ask(ctx, s, c, v)
		if asked.Effect == api.EffectAsk {
			asked.ReasonCode = v.ReasonCode
		}
		return api.HookResponse{Verdict: &asked}, err
	case api.PostToolUse, api.PostToolUseFailure:
		return api.HookResponse{}, g.executed(ctx, s, ev, name == api.PostToolUseFailure)
	case api.PostToolBatch:
		return api.HookResponse{}, g.batch(ctx, ev)
	case api.PermissionRequest:
		v, err := g.permissionRequest(ctx, s, ev)
		return api.HookResponse{Verdict: v}, err
	case api.SessionEnd:
		return api.HookResponse{}, g.sessionEnd(ctx, s)
	default:
		return api.HookResponse{}, fmt.Errorf("%w: unsupported hook_event_name %q", errBadEvent, name)
	}
}

// deferAsk ends the run on an ask (toolgate run --on-ask defer): the
// approval is recorded as for any ask, the call is marked deferred, and
// the hook answers "defer"; toolgate resume goes on once a person decided.
// Claude Code keeps only the last deferred call of a message (the others
// vanish), so a session defers one call: another ask is denied
// deferred_sibling, and the model may propose it again after the resume.
// Deferrals are serialized: the hooks of a message's calls run at once,
// and two that both found no call deferred would each get an approval
// and "defer", while Claude Code resumes only one of them.
func (g *gate) deferAsk(ctx context.Context, s *gateSession, c api.Call, v api.Verdict, claudeSession string) (api.HookResponse, error) {
	g.sessions.deferMu.Lock()
	defer g.sessions.deferMu.Unlock()
	if waiting := g.sessions.deferredCall(s); waiting != "" && waiting != c.ToolUseID {
		v, err := g.settleAsk(ctx, c.ToolUseID, denyByRule(api.ReasonDeferredSibling, v.RuleID))
		return api.HookResponse{Verdict: &v}, err
	}
	v, err := g.ask(ctx, s, c, v)
	if err != nil || v.Effect != api.EffectAsk {
		return api.HookResponse{Verdict: &v}, err
	}
	if err := g.sessions.deferCall(ctx, s, c.ToolUseID, claudeSession); err != nil {
		return api.HookResponse{}, err
	}
	return api.HookResponse{Verdict: &v, Defer: true}, nil
}

// callOf is the call a hook event is about.
func callOf(ev gjson.Result) (api.Call, error) {
	c := api.Call{ToolUseID: ev.Get("tool_use_id").String(), ToolName: ev.Get("tool_name").String(),
		AgentID: ev.Get("agent_id").String(), Cwd: ev.Get("cwd").String()}
	input := ev.Get("tool_input")
	if c.ToolUseID == "" || c.ToolName == "" || !input.IsObject() {
		return c, fmt.Errorf("%w: tool_use_id, tool_name and an object tool_input are required", errBadEvent)
	}
	c.Input = json.RawMessage(input.Raw)
	return c, nil
}

// decide gives a call its verdict, once per tool_use_id: the session
// decides it (outside the ledger's writer), and the ledger records the
// proposal with that verdict in one durable transaction, unless the call
// was decided before; then the recorded verdict stands, a call that
// already ran (or, proposed again by the hook, was allowed or waits for a
// person) is denied duplicate_tool_use_id, and one proposed with another
// input tool_use_id_conflict. fromHook says the call comes from
// PreToolUse: a terminal verdict's write-back is recorded in the same
// transaction, and a proposal of a settled tool_use_id is recorded as a
// repeat. (The prompt tool asks about calls their PreToolUse decided.)
func (g *gate) decide(ctx context.Context, s *gateSession, c api.Call, fromHook bool) (api.Verdict, error) {
	c.SessionID = s.id
	v := s.decider.In(c.Cwd).Evaluate(c.ToolName, c.Input)
	stored, fresh, err := g.ledger.Record(ctx, c, v, fromHook)
	switch {
	case ledger.IsConflict(err):
		g.log.Warn("tool_use_id proposed again with another input or in another directory", "tool_use_id", c.ToolUseID, "session", s.id)
		v = api.Deny(api.ReasonToolUseIDConflict, api.SourceLedger)
	case err != nil:
		return api.Verdict{}, err
	case fresh:
		return v, nil
	case stored.SessionID != s.id:
		// A tool_use_id is one call of one session: another session that
		// proposes it (the model chooses ids) gets nothing of its verdict,
		// least of all a person's approval.
		g.log.Warn("tool_use_id proposed by another session", "tool_use_id", c.ToolUseID, "session", s.id, "its session", stored.SessionID)
		v = api.Deny(api.ReasonToolUseIDConflict, api.SourceLedger)
	case stored.Executions > 0:
		v = api.Deny(api.ReasonDuplicateToolUseID, api.SourceLedger)
	case fromHook && stored.Deferred && stored.Effect != api.EffectAsk:
		// toolgate resume: Claude Code proposes the deferred call again,
		// and it gets the person's decision (or the expiry's), once: the
		// ledger records the proposal as a repeat in the same transaction
		// as it checks that none came before (TakeResume), so that the next
		// one of the id is a duplicate, whether or not its run was
		// recorded yet, and two at once cannot both run.
		taken, err := g.ledger.TakeResume(ctx, c.ToolUseID, s.id)
		if errors.Is(err, ledger.ErrResumeAnswered) {
			v = api.Deny(api.ReasonDuplicateToolUseID, api.SourceLedger)
			break
		}
		if err != nil {
			return api.Verdict{}, err
		}
		v = answer(taken.Verdict)
		g.writeBack(ctx, c.ToolUseID, v)
		return v, nil
	case fromHook && stored.Effect != api.EffectDeny:
		// The hook proposes again a call that was allowed (it may be
		// running: toolgate run learns what ran from Claude Code's
		// transcript, after the fact) or still waits for a person.
		v = api.Deny(api.ReasonDuplicateToolUseID, api.SourceLedger)
	case stored.Effect == api.EffectAsk:
		return answer(stored.Verdict), nil // still waiting for a person
	default:
		v = answer(stored.Verdict)
	}
	if fromHook {
		// The model sent this tool_use_id again: the audit and the report
		// must show the second proposal and its answer.
		if _, err := g.ledger.RecordRepeat(ctx, c.ToolUseID, s.id, v); err != nil {
			return api.Verdict{}, err
		}
	}
	return v, nil
}

// answer is a recorded verdict as the model gets it again: a deny with
// the message it was given (or the standard one).
func answer(v api.Verdict) api.Verdict {
	if v.Effect == api.EffectDeny && v.Message == "" {
		v.Message = api.DenyMessage(v, "")
	}
	return v
}

// prompt answers one permission_prompt call: the recorded verdict of the
// call (deciding it now if the hook never saw it), with the input to run on
// allow. An ask becomes an approval record; the verdict then says ask,
// with the approval's id, and the caller waits for it (wait).
func (g *gate) prompt(ctx context.Context, s *gateSession, c api.Call, caller int) (api.Verdict, error) {
	if !s.settings.Installed {
		// toolgate run's hook proposes every call before Claude Code asks
		// the prompt tool about it: a prompt for a call never proposed
		// comes from something else holding the tool's token.
		if _, err := g.ledger.Call(ctx, c.ToolUseID); errors.Is(err, ledger.ErrNotFound) {
			return g.notProposed(ctx, s, c, caller)
		}
	}
	v, err := g.decide(ctx, s, c, false)
	if err != nil {
		return api.Verdict{}, err
	}
	if v.Effect == api.EffectAsk {
		return g.ask(ctx, s, c, v)
	}
	if v.Effect == api.EffectAllow {
		v.UpdatedInput = c.Input
	}
	g.writeBack(ctx, c.ToolUseID, v)
	return v, nil
}

// notProposed denies, records and reports a prompt for a call the hook
// never proposed.
func (g *gate) notProposed(ctx context.Context, s *gateSession, c api.Call, caller int) (api.Verdict, error) {
	v := api.Deny(api.ReasonNotProposed, api.SourceGate)
	c.SessionID = s.id
	if _, _, err := g.ledger.Record(ctx, c, v, false); err != nil && !ledger.IsConflict(err) {
		return api.Verdict{}, err
	}
	g.log.Warn("a permission prompt for a call the hook never proposed", "tool_use_id", c.ToolUseID, "session", s.id, "pid", caller)
	if err := g.ledger.RecordIncident(ctx, c.ToolUseID, api.Incident{What: api.ReasonNotProposed, PID: caller,
		Detail: "permission_prompt for a call the hook never proposed"}); err != nil {
		g.log.Error("record an incident", "err", err)
	}
	g.writeBack(ctx, c.ToolUseID, v)
	return v, nil
}

// writeBack records what the gate answered for a call. The answer stands
// even if recording it fails; the failure is logged.
func (g *gate) writeBack(ctx context.Context, toolUseID string, v api.Verdict) {
	if _, err := g.ledger.RecordWriteBack(ctx, api.WriteBackOf(toolUseID, v)); err != nil {
		g.log.Error("record write-back", "tool_use_id", toolUseID, "err", err)
	}
}

// executed records a PostToolUse or PostToolUseFailure.
func (g *gate) executed(ctx context.Context, s *gateSession, ev gjson.Result, failed bool) error {
	id := ev.Get("tool_use_id").String()
	if id == "" {
		return fmt.Errorf("%w: no tool_use_id", errBadEvent)
	}
	outcome := "ok"
	if failed {
		outcome = clip.String(ev.Get("error").String(), 200)
	}
	g.answeredInDialog(ctx, s, id)
	_, err := g.ledger.RecordExecution(ctx, id, ledger.Execution{Failed: failed, Outcome: outcome})
	if errors.Is(err, ledger.ErrNotFound) {
		// An execution the gate never saw proposed: record the call, then
		// the execution, so that the audit shows it ran without a decision.
		c, cerr := callOf(ev)
		if cerr != nil {
			return cerr
		}
		c.SessionID = s.id
		if _, _, err := g.ledger.Propose(ctx, c); err != nil && !ledger.IsConflict(err) {
			return err
		}
		g.log.Error("a call ran that the gate never decided", "tool_use_id", id, "session", s.id)
		_, err = g.ledger.RecordExecution(ctx, id, ledger.Execution{Failed: failed, Outcome: outcome})
	}
	if ledger.IsDuplicateExecution(err) {
		g.log.Error("a tool_use_id ran twice", "tool_use_id", id, "session", s.id)
		return nil
	}
	return err
}

// outcomes records what became of a session's calls once decided, as
// toolgate run read it from Claude Code's transcript, and returns the
// calls that ran without ever being proposed.
func (g *gate) outcomes(ctx context.Context, s *gateSession, outcomes []api.Outcome) ([]string, error) {
	if len(outcomes) == 0 {
		return nil, nil
	}
	results, err := g.ledger.RecordOutcomes(ctx, s.id, outcomes)
	var undecided []string
	for _, r := range results {
		if r.Undecided {
			undecided = append(undecided, r.ToolUseID)
			g.log.Error("a call ran that the gate never decided", "tool_use_id", r.ToolUseID, "session", s.id)
		}
		if r.Duplicate {
			// The gate allowed it once: a second run is none of its, and
			// run stops the session as for a call never proposed.
			undecided = append(undecided, r.ToolUseID)
			g.log.Error("a tool_use_id ran twice", "tool_use_id", r.ToolUseID, "session", s.id)
		}
		if r.Denied {
			// Not the gate's word: run stops the session, as for a call
			// never proposed.
			undecided = append(undecided, r.ToolUseID)
			g.log.Error("the transcript says a call the gate denied ran", "tool_use_id", r.ToolUseID, "session", s.id)
		}
	}
	return undecided, err
}

// batch records what the model saw of every call of one message.
func (g *gate) batch(ctx context.Context, ev gjson.Result) error {
	var err error
	ev.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
		id := c.Get("tool_use_id").String()
		if id == "" {
			return true
		}
		seen := c.Get("tool_response")
		text := seen.String()
		if !seen.IsArray() && seen.Type != gjson.String {
			text = seen.Raw
		}
		err = g.ledger.RecordSeen(ctx, id, text)
		return err == nil
	})
	return err
}
