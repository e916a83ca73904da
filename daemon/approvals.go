package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/ledger"
)

// PendingCap is how many asks of one session may wait for a person at
// once; beyond it a call is denied queue_full, so that a looping agent
// cannot flood anyone.
const PendingCap = 20

// ask turns an ask verdict into a durable approval record, created before
// anyone waits (or found again: a call has one approval, whatever asks for
// it). It returns the verdict to give now: ask with the approval's id and
// expiry, or the final verdict when the approval is already settled.
func (g *gate) ask(ctx context.Context, s *gateSession, c api.Call, v api.Verdict) (api.Verdict, error) {
	if existing, err := g.ledger.ApprovalFor(ctx, c.ToolUseID); err == nil {
		return g.askVerdict(ctx, existing)
	}
	if s.settings.OnAsk == "deny" {
		return g.settleAsk(ctx, c.ToolUseID, denyByRule(api.ReasonNoApprover, v.RuleID))
	}
	pending, err := g.ledger.Pending(ctx)
	if err != nil {
		return api.Verdict{}, err
	}
	n := 0
	for _, a := range pending {
		if a.SessionID == s.id {
			n++
		}
	}
	if n >= PendingCap {
		return g.settleAsk(ctx, c.ToolUseID, denyByRule(api.ReasonQueueFull, v.RuleID))
	}
	timeout := time.Duration(s.settings.ApprovalTimeout)
	if rt := time.Duration(v.ApprovalTimeout); rt > 0 && (!s.settings.Installed || rt < timeout) {
		timeout = rt // an installed hook cannot wait longer than its own timeout allows
	}
	a, existed, err := g.ledger.CreateApproval(ctx, c.ToolUseID, ledger.ApprovalRequest{MatchedRule: v.RuleID,
		PolicyVersion: s.decider.Policy.Version, Timeout: timeout, HandOff: s.settings.Installed})
	if err != nil {
		return api.Verdict{}, err
	}
	if !existed {
		g.publish(ctx, api.EventRequested, a)
		g.rearm()
	}
	return g.askVerdict(ctx, a)
}

// denyByRule is the gate's own deny of an ask, naming the asking rule.
func denyByRule(reason, ruleID string) api.Verdict {
	v := api.Verdict{Effect: api.EffectDeny, ReasonCode: reason, Source: api.SourceGate, RuleID: ruleID}
	v.Message = api.DenyMessage(v, "")
	return v
}

// settleAsk records a final decision on an ask that nobody will be asked
// about, and its write-back.
func (g *gate) settleAsk(ctx context.Context, toolUseID string, v api.Verdict) (api.Verdict, error) {
	c, err := g.ledger.Decide(ctx, toolUseID, v)
	if ledger.IsAlreadyDecided(err) {
		return answer(c.Verdict), nil
	}
	if err != nil {
		return api.Verdict{}, err
	}
	g.writeBack(ctx, toolUseID, v)
	return v, nil
}

// askVerdict is the verdict for an approval as it stands.
func (g *gate) askVerdict(ctx context.Context, a api.Approval) (api.Verdict, error) {
	if a.Status == api.StatusPending {
		exp := a.ExpiresAt
		v := api.Verdict{Effect: api.EffectAsk, ApprovalID: a.ID, ExpiresAt: &exp, Source: api.SourcePolicy}
		if a.MatchedRule != nil {
			v.RuleID = *a.MatchedRule
		}
		return v, nil
	}
	c, err := g.ledger.Call(ctx, a.ToolUseID)
	if err != nil {
		return api.Verdict{}, err
	}
	v := answer(c.Verdict)
	if v.Effect == api.EffectAllow {
		v.UpdatedInput = a.Input // the input as submitted
	}
	return v, nil
}

// errStillPending is returned by wait when its context ends first.
var errStillPending = errors.New("the approval is still pending")

// errStopping is returned by wait when the daemon stops first: the
// approval stays pending, for the daemon that comes next.
var errStopping = errors.New("the daemon is stopping; the approval stays pending")

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
		if a.Status != api.StatusPending {
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
		case <-g.stopping:
			cancel()
			return api.Verdict{}, errStopping
		}
	}
}

// resolve records a person's decision and tells everyone. A refused
// decision (the approval was settled before) changes nothing and tells
// nobody, unless the refusal itself expired the approval.
func (g *gate) resolve(ctx context.Context, id string, approve bool, who actor, note string) (api.Approval, error) {
	a, err := g.ledger.Approval(ctx, id)
	if err != nil {
		return a, err
	}
	c, err := g.ledger.Call(ctx, a.ToolUseID)
	if err != nil {
		return a, err
	}
	d := api.Decision{ApprovalID: id, Decision: api.EffectDeny, Actor: who.Name, ActorPID: who.PID, ActorExe: who.Exe,
		Note: note, ReasonCode: personReason(c, approve)}
	if approve {
		d.Decision = api.EffectAllow
	}
	a, _, err = g.ledger.Resolve(ctx, d)
	var te *ledger.TerminalError
	if err == nil || errors.As(err, &te) && te.ExpiredNow {
		kind := api.EventDecided
		if a.Status == api.StatusExpired {
			kind = api.EventExpired
		}
		g.publish(ctx, kind, a)
		g.broker.changed(id)
		g.rearm()
	}
	return a, err
}

// personReason is the reason_code of a person's decision: the asking
// rule's own, else user_approved or user_denied.
func personReason(c api.Call, approve bool) string {
	if c.RuleID != "" && c.ReasonCode != "" {
		return c.ReasonCode
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
		now := time.Now()
		if g.fleet != nil {
			g.arbitrateDue(ctx, now)
		}
		expired, err := g.ledger.ExpireDue(ctx, now)
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

// endSession ends a session and tells everyone about the approvals of it
// that the end settled.
func (g *gate) endSession(ctx context.Context, id, reason string) (api.Session, error) {
	rec, expired, err := g.sessions.end(ctx, id, reason)
	for _, e := range expired {
		g.log.Info("approval settled: its session ended", "approval", e.Approval.ID, "session", id, "reason", reason)
		g.publish(ctx, api.EventExpired, e.Approval)
		g.broker.changed(e.Approval.ID)
	}
	if len(expired) > 0 {
		g.rearm()
	}
	return rec, err
}

// rearm tells the expiry loop that the soonest expiry may have changed.
func (g *gate) rearm() {
	select {
	case g.rearmc <- struct{}{}:
	default:
	}
}

func (g *gate) publish(ctx context.Context, kind string, a api.Approval) {
	detail := g.detail(ctx, a)
	g.broker.publish(api.WatchEvent{Type: kind, Time: time.Now().UTC(), Approval: &detail})
}

// detail is an approval with its decision and write-back, for approvers.
func (g *gate) detail(ctx context.Context, a api.Approval) api.ApprovalDetail {
	out := api.ApprovalDetail{Approval: a}
	if c, err := g.ledger.Call(ctx, a.ToolUseID); err == nil && c.Effect == api.EffectAsk {
		out.ReasonCode = c.ReasonCode
	}
	if d, err := g.ledger.DecisionFor(ctx, a.ID); err == nil {
		out.Decision = &d
	}
	if w, err := g.ledger.WriteBackFor(ctx, a.ToolUseID); err == nil {
		out.WriteBack = &w
	}
	return out
}

// describeRefusal says why a decision was refused, for the approver.
func describeRefusal(te *ledger.TerminalError) string {
	switch {
	case te.Withdrawn():
		return fmt.Sprintf("approval %s was withdrawn: the run that asked was stopped before anyone decided, and the call was denied %s",
			te.Approval.ID, api.ReasonApprovalWithdrawn)
	case te.AnsweredInDialog():
		return fmt.Sprintf("approval %s was answered in Claude Code's own dialog, and the call ran; nothing decided here could take effect",
			te.Approval.ID)
	case te.Approval.Status == api.StatusExpired:
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
