package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/supervisor/api"
)

// gate decides calls: the part of the daemon that the hook and the prompt
// tool talk to.
type gate struct {
	ledger   *ledger.Ledger
	sessions *sessions
	log      *slog.Logger
	broker   *broker
	rearmc   chan struct{} // wakes the expiry loop
	claims   claims        // the calls installed hooks' PermissionRequests wait on
}

// proposal is a call as the hook or the prompt tool saw it.
type proposal struct {
	toolUseID string
	toolName  string
	agentID   string
	input     json.RawMessage
}

// errBadEvent is a hook event the gate cannot use.
var errBadEvent = errors.New("malformed hook event")

// hook handles one hook event. PreToolUse gets a verdict; the events after
// a call are recorded and get none; an installed hook's PermissionRequest
// waits for a person, and its SessionEnd ends the session.
func (g *gate) hook(ctx context.Context, s *gateSession, raw []byte) (*api.Verdict, error) {
	if !gjson.ValidBytes(raw) {
		return nil, fmt.Errorf("%w: not JSON", errBadEvent)
	}
	ev := gjson.ParseBytes(raw)
	switch name := ev.Get("hook_event_name").String(); name {
	case "PreToolUse":
		p, err := proposalOf(ev)
		if err != nil {
			return nil, err
		}
		v, repeat, err := g.decideRepeat(ctx, s, p, true)
		if err != nil {
			return nil, err
		}
		if repeat {
			// The model sent this tool_use_id again: the audit and the
			// report must show the second proposal and its answer.
			if _, err := g.ledger.RecordRepeat(ctx, p.toolUseID, s.rec.ID, v.Effect, v.ReasonCode); err != nil {
				return nil, err
			}
		}
		return &v, nil
	case "PostToolUse", "PostToolUseFailure":
		return nil, g.executed(ctx, s, ev, name == "PostToolUseFailure")
	case "PostToolBatch":
		return nil, g.batch(ctx, ev)
	case "PermissionRequest":
		return g.permissionRequest(ctx, s, ev)
	case "SessionEnd":
		return nil, g.sessionEnd(ctx, s)
	default:
		return nil, fmt.Errorf("%w: unsupported hook_event_name %q", errBadEvent, name)
	}
}

func proposalOf(ev gjson.Result) (proposal, error) {
	p := proposal{toolUseID: ev.Get("tool_use_id").String(), toolName: ev.Get("tool_name").String(),
		agentID: ev.Get("agent_id").String()}
	input := ev.Get("tool_input")
	if p.toolUseID == "" || p.toolName == "" || !input.IsObject() {
		return p, fmt.Errorf("%w: tool_use_id, tool_name and an object tool_input are required", errBadEvent)
	}
	p.input = json.RawMessage(input.Raw)
	return p, nil
}

// decide records the proposal durably, enforces once-per-tool_use_id, then
// checks the schema and the policy, and records the decision. A call that
// was decided before gets that decision again.
func (g *gate) decide(ctx context.Context, s *gateSession, p proposal) (api.Verdict, error) {
	v, _, err := g.decideRepeat(ctx, s, p, false)
	return v, err
}

// decideRepeat is decide, also saying whether the tool_use_id had already
// been decided (or had run) before this proposal. With writeBack, a final
// decision's write-back is recorded in the same durable transaction as the
// proposal and the decision: one fsync per call.
func (g *gate) decideRepeat(ctx context.Context, s *gateSession, p proposal, writeBack bool) (api.Verdict, bool, error) {
	var v api.Verdict
	repeat := false
	_, _, err := g.ledger.Gate(ctx, ledger.Proposal{ToolUseID: p.toolUseID, SessionID: s.rec.ID, AgentID: p.agentID,
		ToolName: p.toolName, Input: p.input}, func(c ledger.Call, existed bool) (*ledger.CallDecision, *ledger.WriteBack) {
		switch {
		case existed && c.Executions > 0:
			v, repeat = deny(api.ReasonDuplicateToolUseID, api.SourceLedger, "", ""), true
			return nil, nil
		case existed && c.Decision.Terminal():
			v, repeat = verdictOf(c.Decision), true
			return nil, nil
		case existed && c.Decision != nil:
			v = verdictOf(c.Decision) // an ask, still waiting
			return nil, nil
		}
		// New, or proposed and never decided (the daemon died in between).
		v = g.evaluate(s, p)
		d := &ledger.CallDecision{Effect: v.Effect, RuleID: v.RuleID, ReasonCode: v.ReasonCode, Source: v.Source}
		if !writeBack || v.Effect == api.Ask {
			return d, nil
		}
		return d, &ledger.WriteBack{ToolUseID: p.toolUseID, Effect: v.Effect, RuleID: v.RuleID, ReasonCode: v.ReasonCode, WroteBack: true}
	})
	if ledger.IsConflict(err) {
		g.log.Warn("tool_use_id proposed again with another input", "tool_use_id", p.toolUseID, "session", s.rec.ID)
		return deny(api.ReasonToolUseIDConflict, api.SourceLedger, "", ""), true, nil
	}
	return v, repeat, err
}

// evaluate decides a call on its own merits: tools that need a person at
// the interactive UI, the input schema, then the policy.
func (g *gate) evaluate(s *gateSession, p proposal) api.Verdict {
	if s.requiresUser[p.toolName] {
		return deny(api.ReasonRequiresUser, api.SourceDowngrade, "", "")
	}
	var se *policy.SchemaError
	if err := s.policy.Validate(p.toolName, p.input, s.discovered); errors.As(err, &se) {
		return deny(api.ReasonSchemaInvalid, api.SourceSchema, "", schemaMessage(se))
	}
	d := s.policy.Decide(policy.Call{Tool: p.toolName, Input: p.input, Cwd: s.rec.Cwd, Home: s.settings.Home})
	source := api.SourcePolicy
	if d.ReasonCode == policy.ReasonSchemaInvalid {
		source = api.SourceSchema
	}
	v := api.Verdict{Effect: string(d.Effect), RuleID: d.RuleID, ReasonCode: d.ReasonCode, Source: source}
	if v.Effect == api.Deny {
		v.Message = api.DenyMessage(v, d.Message)
	}
	return v
}

// prompt answers one permission_prompt call: the recorded decision of the
// call (deciding it now if the hook never saw it), with the input to run on
// allow. An ask becomes an approval record; the verdict then says ask,
// with the approval's id, and the caller waits for it (wait).
func (g *gate) prompt(ctx context.Context, s *gateSession, p proposal) (api.Verdict, error) {
	v, err := g.decide(ctx, s, p)
	if err != nil {
		return api.Verdict{}, err
	}
	if v.Effect == api.Ask {
		return g.ask(ctx, s, p, v)
	}
	if v.Effect == api.Allow {
		v.Input = p.input
	}
	g.writeBack(ctx, p.toolUseID, v)
	return v, nil
}

// writeBack records what the gate answered for a call: an ask verdict
// means nothing was written back (Claude Code's dialog decides). The answer
// stands even if recording it fails; the failure is logged.
func (g *gate) writeBack(ctx context.Context, toolUseID string, v api.Verdict) {
	_, err := g.ledger.RecordWriteBack(ctx, ledger.WriteBack{ToolUseID: toolUseID, Effect: v.Effect,
		RuleID: v.RuleID, ReasonCode: v.ReasonCode, WroteBack: v.Effect != api.Ask})
	if err != nil {
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
		outcome = clip(ev.Get("error").String(), 200)
	}
	_, err := g.ledger.RecordExecution(ctx, id, ledger.Execution{Failed: failed, Outcome: outcome})
	if errors.Is(err, ledger.ErrNotFound) {
		// An execution the gate never saw proposed: record the call, then
		// the execution, so that the audit shows it ran without a decision.
		p, perr := proposalOf(ev)
		if perr != nil {
			return perr
		}
		if _, _, err := g.ledger.Propose(ctx, ledger.Proposal{ToolUseID: id, SessionID: s.rec.ID, ToolName: p.toolName, Input: p.input}); err != nil && !ledger.IsConflict(err) {
			return err
		}
		g.log.Error("a call ran that the gate never decided", "tool_use_id", id, "session", s.rec.ID)
		_, err = g.ledger.RecordExecution(ctx, id, ledger.Execution{Failed: failed, Outcome: outcome})
	}
	if ledger.IsDuplicateExecution(err) {
		g.log.Error("a tool_use_id ran twice", "tool_use_id", id, "session", s.rec.ID)
		return nil
	}
	return err
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

// verdictOf turns a recorded decision back into a verdict.
func verdictOf(d *ledger.CallDecision) api.Verdict {
	v := api.Verdict{Effect: d.Effect, RuleID: d.RuleID, ReasonCode: d.ReasonCode, Source: d.Source, ApprovalID: d.ApprovalID}
	if v.Effect == api.Deny {
		v.Message = api.DenyMessage(v, "")
	}
	return v
}

func deny(reason, source, ruleID, extra string) api.Verdict {
	v := api.Verdict{Effect: api.Deny, RuleID: ruleID, ReasonCode: reason, Source: source}
	v.Message = api.DenyMessage(v, extra)
	return v
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
