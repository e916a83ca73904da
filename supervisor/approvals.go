package supervisor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/supervisor/api"
)

// PendingCap is how many asks of one session may wait for a person at
// once; beyond it a call is denied queue_full, so that a looping agent
// cannot flood anyone.
const PendingCap = 20

// ask turns an ask verdict into a durable approval record, created before
// anyone waits (or found again: a call has one approval, whatever asks for
// it). It returns the verdict to give now: ask with the approval's id and
// expiry, or the final verdict when the approval is already settled.
func (g *gate) ask(ctx context.Context, s *gateSession, p proposal, v api.Verdict) (api.Verdict, error) {
	if existing, err := g.ledger.ApprovalFor(ctx, p.toolUseID); err == nil {
		return g.askVerdict(ctx, existing)
	}
	if s.settings.OnAsk == "deny" {
		return g.settleAsk(ctx, p.toolUseID, deny(api.ReasonNoApprover, api.SourceGate, v.RuleID, ""))
	}
	pending, err := g.ledger.Pending(ctx)
	if err != nil {
		return api.Verdict{}, err
	}
	n := 0
	for _, a := range pending {
		if a.SessionID == s.rec.ID {
			n++
		}
	}
	if n >= PendingCap {
		return g.settleAsk(ctx, p.toolUseID, deny(api.ReasonQueueFull, api.SourceGate, v.RuleID, ""))
	}
	timeout := time.Duration(s.settings.ApprovalTimeout)
	if rt := s.ruleTimeout(v.RuleID); rt > 0 && (!s.settings.Installed || rt < timeout) {
		timeout = rt // an installed hook cannot wait longer than its own timeout allows
	}
	a, existed, err := g.ledger.CreateApproval(ctx, ledger.ApprovalRequest{ToolUseID: p.toolUseID, MatchedRule: v.RuleID,
		PolicyVersion: s.policy.Version, Timeout: timeout, HandOff: s.settings.Installed})
	if err != nil {
		return api.Verdict{}, err
	}
	if !existed {
		g.publish(ctx, api.EventRequested, a)
		g.rearm()
	}
	return g.askVerdict(ctx, a)
}

// settleAsk records a final decision on an ask that nobody will be asked
// about, and its write-back.
func (g *gate) settleAsk(ctx context.Context, toolUseID string, v api.Verdict) (api.Verdict, error) {
	c, err := g.ledger.Decide(ctx, toolUseID, ledger.CallDecision{Effect: v.Effect, RuleID: v.RuleID,
		ReasonCode: v.ReasonCode, Source: v.Source})
	if ledger.IsAlreadyDecided(err) {
		return verdictOf(c.Decision), nil
	}
	if err != nil {
		return api.Verdict{}, err
	}
	g.writeBack(ctx, toolUseID, v)
	return v, nil
}

// askVerdict is the verdict for an approval as it stands.
func (g *gate) askVerdict(ctx context.Context, a ledger.Approval) (api.Verdict, error) {
	if a.Status == ledger.StatusPending {
		exp := a.ExpiresAt
		v := api.Verdict{Effect: api.Ask, ApprovalID: a.ID, ExpiresAt: &exp, Source: api.SourcePolicy}
		if a.MatchedRule != nil {
			v.RuleID = *a.MatchedRule
		}
		return v, nil
	}
	c, err := g.ledger.Call(ctx, a.ToolUseID)
	if err != nil {
		return api.Verdict{}, err
	}
	v := verdictOf(c.Decision)
	if v.Effect == api.Allow {
		v.Input = a.Input // the input as submitted
	}
	return v, nil
}

// errStillPending is returned by wait when its context ends first.
var errStillPending = errors.New("the approval is still pending")

// wait blocks until the approval is settled and returns the verdict for
// the call, recording its write-back.
func (g *gate) wait(ctx context.Context, id string) (api.Verdict, error) {
	for {
		changed, cancel := g.broker.waitFor(id)
		a, err := g.ledger.Approval(ctx, id)
		if err != nil {
			cancel()
			return api.Verdict{}, err
		}
		if a.Status != ledger.StatusPending {
			cancel()
			v, err := g.askVerdict(ctx, a)
			if err == nil {
				g.writeBack(ctx, a.ToolUseID, v)
			}
			return v, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			cancel()
			return api.Verdict{}, errStillPending
		}
	}
}

// resolve records a person's decision and tells everyone.
func (g *gate) resolve(ctx context.Context, id string, approve bool, who actor, note string) (ledger.Approval, ledger.Decision, error) {
	a, err := g.ledger.Approval(ctx, id)
	if err != nil {
		return a, ledger.Decision{}, err
	}
	c, err := g.ledger.Call(ctx, a.ToolUseID)
	if err != nil {
		return a, ledger.Decision{}, err
	}
	r := ledger.Resolution{Status: ledger.StatusDenied, Actor: who.Name, ActorPID: who.PID, ActorExe: who.Exe,
		Note: note, ReasonCode: personReason(c, approve)}
	if approve {
		r.Status = ledger.StatusApproved
	}
	a, d, err := g.ledger.Resolve(ctx, id, r)
	if err == nil || ledger.IsTerminal(err) {
		kind := api.EventDecided
		if a.Status == ledger.StatusExpired {
			kind = api.EventExpired
		}
		g.publish(ctx, kind, a)
		g.broker.changed(id)
		g.rearm()
	}
	return a, d, err
}

// personReason is the reason_code of a person's decision: the asking
// rule's own, else user_approved or user_denied.
func personReason(c ledger.Call, approve bool) string {
	if d := c.Decision; d != nil && d.RuleID != "" && d.ReasonCode != "" {
		return d.ReasonCode
	}
	if approve {
		return api.ReasonUserApproved
	}
	return api.ReasonUserDenied
}

// expireLoop expires approvals when they are due, with one timer for the
// soonest, re-armed from the ledger on start and after every change.
func (g *gate) expireLoop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.rearmc:
		case <-timer.C:
		}
		expired, err := g.ledger.ExpireDue(ctx, time.Now())
		if err != nil {
			g.log.Error("expire approvals", "err", err)
		}
		for _, e := range expired {
			g.log.Info("approval expired", "approval", e.Approval.ID, "tool_use_id", e.Approval.ToolUseID)
			g.publish(ctx, api.EventExpired, e.Approval)
			g.broker.changed(e.Approval.ID)
		}
		next := time.Hour
		if pending, err := g.ledger.Pending(ctx); err == nil && len(pending) > 0 {
			next = max(time.Until(pending[0].ExpiresAt), 0)
		} else if err != nil {
			next = time.Second // the ledger is in trouble: try again soon
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

// rearm tells the expiry loop that the soonest expiry may have changed.
func (g *gate) rearm() {
	select {
	case g.rearmc <- struct{}{}:
	default:
	}
}

func (g *gate) publish(ctx context.Context, kind string, a ledger.Approval) {
	detail := g.detail(ctx, a)
	g.broker.publish(api.WatchEvent{Type: kind, Time: time.Now().UTC(), Approval: &detail})
}

// detail is an approval with its decision and write-back, for approvers.
func (g *gate) detail(ctx context.Context, a ledger.Approval) api.ApprovalDetail {
	out := api.ApprovalDetail{Approval: api.Approval{ID: a.ID, SessionID: a.SessionID, ToolUseID: a.ToolUseID,
		ToolName: a.ToolName, Input: a.Input, MatchedRule: a.MatchedRule, PolicyVersion: a.PolicyVersion,
		Status: a.Status, CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt}}
	if c, err := g.ledger.Call(ctx, a.ToolUseID); err == nil && c.Decision != nil && c.Decision.Effect == api.Ask {
		out.ReasonCode = c.Decision.ReasonCode
	}
	if d, err := g.ledger.DecisionFor(ctx, a.ID); err == nil {
		out.Decision = &api.Decision{ApprovalID: d.ApprovalID, ToolUseID: d.ToolUseID, Decision: d.Decision,
			Actor: d.Actor, ReasonCode: d.ReasonCode, DecidedAt: d.DecidedAt, ActorPID: d.ActorPID, ActorExe: d.ActorExe, Note: d.Note}
	}
	if w, err := g.ledger.WriteBackFor(ctx, a.ToolUseID); err == nil {
		out.WriteBack = &api.WriteBack{ToolUseID: w.ToolUseID, Effect: w.Effect, RuleID: w.RuleID,
			ReasonCode: w.ReasonCode, WroteBack: w.WroteBack}
	}
	return out
}

// describeRefusal says why a decision was refused, for the approver.
func describeRefusal(te *ledger.TerminalError) string {
	switch te.Approval.Status {
	case ledger.StatusExpired:
		return fmt.Sprintf("approval %s expired at %s; nothing was decided, and the call was denied approval_expired",
			te.Approval.ID, te.Approval.ExpiresAt.Local().Format(time.RFC3339))
	default:
		by := ""
		if te.Decision != nil && te.Decision.Actor != "" {
			by = " by " + te.Decision.Actor
		}
		return fmt.Sprintf("approval %s was already %s%s", te.Approval.ID, te.Approval.Status, by)
	}
}
