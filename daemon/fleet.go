package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/fleet"
	"github.com/toolgate/toolgate/ledger"
)

// With a fleet configured (Config.Fleet), the daemon publishes its audit
// chain to Postgres and Postgres arbitrates its approvals: a person decides
// through toolgate.decide (toolgate approve --fleet, toolgate web --fleet),
// and the daemon applies the decision here, through the same path as a
// local one. approve.sock then refuses decisions: a second way to decide
// would be a second arbiter. The ledger stays the authority for what runs
// and for once-per-id; nothing on the hook's path waits for Postgres.

// arbitrated applies a decision Postgres made on one of this host's asks.
func (g *gate) arbitrated(ctx context.Context, dec fleet.Decided) error {
	a, err := g.ledger.Approval(ctx, dec.ApprovalID)
	if err != nil {
		return err
	}
	c, err := g.ledger.Call(ctx, a.ToolUseID)
	if err != nil {
		return err
	}
	d := api.Decision{ApprovalID: a.ID, Decision: api.EffectDeny, Actor: "fleet:" + dec.Actor, Note: dec.Note,
		ReasonCode: personReason(c, dec.Allow)}
	if dec.Allow {
		d.Decision = api.EffectAllow
	}
	a, _, err = g.ledger.Arbitrated(ctx, d)
	var te *ledger.TerminalError
	if errors.As(err, &te) {
		return nil // settled here already (expired while Postgres was away): the host's outcome is published
	}
	if err != nil {
		return err
	}
	g.log.Info("approval decided through the fleet", "approval", a.ID, "status", a.Status, "actor", d.Actor)
	g.publish(ctx, api.EventDecided, a)
	g.broker.changed(a.ID)
	g.rearm()
	return nil
}

// arbitrateDue asks the fleet, before the expiry loop expires the due
// approvals, whether a person decided any of them in time. When Postgres
// cannot be reached they expire here: never a silent allow.
func (g *gate) arbitrateDue(ctx context.Context, now time.Time) {
	pending, err := g.ledger.Pending(ctx)
	if err != nil {
		return
	}
	for _, a := range pending {
		if a.ExpiresAt.After(now) {
			return // the soonest first
		}
		if _, err := g.fleet.Expire(ctx, a.ID); err != nil {
			g.log.Warn("fleet: Postgres could not arbitrate the expiry; expiring locally", "approval", a.ID, "err", err)
			return
		}
	}
}
