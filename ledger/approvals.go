package ledger

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/toolgate/toolgate/api"
)

func approvalKey(id string) string         { return "a/" + id }
func approvalOfCallKey(tuid string) string { return "ac/" + tuid }
func decisionKey(id string) string         { return "d/" + id }
func handOffKey(id string) string          { return "ah/" + id }

const pendingPrefix = "ap/"

func pendingKey(a api.Approval) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(a.ExpiresAt.UnixNano()))
	return pendingPrefix + string(b[:]) + "/" + a.ID
}

// NewApprovalID returns a fresh approval id: "apr_" and a ULID.
func NewApprovalID() string { return "apr_" + ulid.Make().String() }

// ApprovalRequest asks for a person's decision on a proposed call.
type ApprovalRequest struct {
	MatchedRule   string // "" when the policy's default asked
	PolicyVersion int
	Timeout       time.Duration // from now to expires_at
	// HandOff makes the end of the wait hand the call to Claude Code's own
	// permission dialog (a session gated by toolgate install's hook):
	// nothing is written back, so the approval's expiry is not a deny.
	HandOff bool
}

// CreateApproval persists a pending approval record for a proposed call,
// before anyone waits on it. A call has at most one approval: asking again
// for the same tool_use_id returns the existing record (existed is true),
// whatever its status, so that a caller that lost its wait (a crash, a
// reconnect) finds the same id and expiry.
func (l *Ledger) CreateApproval(ctx context.Context, toolUseID string, r ApprovalRequest) (a api.Approval, existed bool, err error) {
	if r.Timeout <= 0 {
		return api.Approval{}, false, fmt.Errorf("create approval: the timeout must be positive")
	}
	type out struct {
		a       api.Approval
		existed bool
	}
	o, err := write(ctx, l, func(t *tx) (out, error) {
		var id string
		found, err := t.Get(approvalOfCallKey(toolUseID), &id)
		if err != nil {
			return out{}, err
		}
		if found {
			var a api.Approval
			if _, err := t.Get(approvalKey(id), &a); err != nil {
				return out{}, err
			}
			return out{a, true}, nil
		}
		c, found, err := getCall(t, toolUseID)
		if err == nil && !found {
			err = fmt.Errorf("create approval for %s: %w", toolUseID, ErrNotFound)
		}
		if err != nil {
			return out{}, err
		}
		a := api.Approval{ID: NewApprovalID(), SessionID: c.SessionID, ToolUseID: c.ToolUseID, ToolName: c.ToolName,
			Input: c.Input, PolicyVersion: r.PolicyVersion, Status: api.StatusPending,
			CreatedAt: t.Now(), ExpiresAt: t.Now().Add(r.Timeout)}
		if r.MatchedRule != "" {
			rule := r.MatchedRule
			a.MatchedRule = &rule
		}
		if err := t.Put(approvalKey(a.ID), a); err != nil {
			return out{}, err
		}
		if err := t.Put(approvalOfCallKey(a.ToolUseID), a.ID); err != nil {
			return out{}, err
		}
		if err := t.Set(pendingKey(a), nil); err != nil {
			return out{}, err
		}
		if r.HandOff {
			if err := t.Set(handOffKey(a.ID), nil); err != nil {
				return out{}, err
			}
		}
		return out{a, false}, t.event(KindApprovalCreated, a.ID, a)
	})
	return o.a, o.existed, err
}

// Resolve records a person's decision on a pending approval: d names the
// approval (ApprovalID), the decision (allow or deny), the actor and
// the reason_code, and may carry the actor's pid and executable and a
// note; the ledger fills in the tool_use_id and the time. It moves the
// record to its new status, stores the decision as its own document and
// records the call's verdict, in one transaction. A record that is no
// longer pending fails with a *TerminalError; one whose expires_at has
// passed is expired first, so a late approve never allows.
func (l *Ledger) Resolve(ctx context.Context, d api.Decision) (api.Approval, api.Decision, error) {
	status, err := decidedStatus("resolve", d)
	if err != nil {
		return api.Approval{}, api.Decision{}, err
	}
	return l.decideApproval(ctx, d.ApprovalID, func(t *tx, a api.Approval) (api.Approval, api.Decision, error) {
		if !t.Now().Before(a.ExpiresAt) {
			a, d, err := expire(t, a)
			if err != nil {
				return a, d, err
			}
			return a, d, &TerminalError{Approval: a, Decision: &d, ExpiredNow: true}
		}
		return settle(t, a, status, d)
	})
}

// decidedStatus is the status a person's decision d moves an approval to;
// op names the caller in the error of a decision that is not one.
func decidedStatus(op string, d api.Decision) (string, error) {
	status := api.StatusApproved
	switch d.Decision {
	case api.EffectAllow:
	case api.EffectDeny:
		status = api.StatusDenied
	default:
		return "", fmt.Errorf("%s: decision must be allow or deny, not %q", op, d.Decision)
	}
	if d.Actor == "" || d.ReasonCode == "" {
		return "", fmt.Errorf("%s: actor and reason_code are required", op)
	}
	return status, nil
}

// Arbitrated records a decision that a fleet's arbiter (Postgres) made on
// a pending approval, as Resolve does, except for the deadline: the
// arbiter refused to decide after expires_at by its own clock, and a
// decision it made in time takes effect even when it reaches this host a
// moment after its own clock passed expires_at (the host asks the arbiter
// before it expires an approval, so the two never both decide).
func (l *Ledger) Arbitrated(ctx context.Context, d api.Decision) (api.Approval, api.Decision, error) {
	status, err := decidedStatus("arbitrated", d)
	if err != nil {
		return api.Approval{}, api.Decision{}, err
	}
	return l.decideApproval(ctx, d.ApprovalID, func(t *tx, a api.Approval) (api.Approval, api.Decision, error) {
		return settle(t, a, status, d)
	})
}

// decideApproval runs decide on a pending approval, in one transaction: an
// unknown id is ErrNotFound, and one that is no longer pending a
// *TerminalError with the decision that ended it.
func (l *Ledger) decideApproval(ctx context.Context, id string, decide func(*tx, api.Approval) (api.Approval, api.Decision, error)) (api.Approval, api.Decision, error) {
	type out struct {
		a api.Approval
		d api.Decision
	}
	o, err := write(ctx, l, func(t *tx) (out, error) {
		var a api.Approval
		found, err := t.Get(approvalKey(id), &a)
		if err != nil {
			return out{}, err
		}
		if !found {
			return out{}, fmt.Errorf("approval %s: %w", id, ErrNotFound)
		}
		if a.Status != api.StatusPending {
			var d api.Decision
			if _, err := t.Get(decisionKey(a.ID), &d); err != nil {
				return out{}, err
			}
			d = readDecision(d)
			return out{a, d}, &TerminalError{Approval: a, Decision: &d}
		}
		a, d, err := decide(t, a)
		return out{a, d}, err
	})
	return o.a, o.d, err
}

// settle makes a pending approval terminal: the record's status, the
// decision document, the pending index and the call's verdict (the
// decision's effect).
func settle(t *tx, a api.Approval, status string, d api.Decision) (api.Approval, api.Decision, error) {
	d.ApprovalID, d.ToolUseID, d.DecidedAt = a.ID, a.ToolUseID, t.Now()
	if err := t.Delete(pendingKey(a)); err != nil {
		return a, d, err
	}
	a.Status = status
	if err := t.Put(approvalKey(a.ID), a); err != nil {
		return a, d, err
	}
	if err := t.Put(decisionKey(a.ID), d); err != nil {
		return a, d, err
	}
	if err := t.event(KindApprovalDecided, a.ID, d); err != nil {
		return a, d, err
	}
	at := t.Now()
	v := api.Verdict{Effect: d.Decision, ReasonCode: d.ReasonCode, Source: api.SourcePerson, Actor: d.Actor,
		ApprovalID: a.ID, DecidedAt: &at}
	if a.MatchedRule != nil {
		v.RuleID = *a.MatchedRule
	}
	switch {
	case status == api.StatusExpired && d.Decision == api.EffectAsk:
		v.Source = api.SourceClaude // still an ask: Claude Code's dialog decides
	case status == api.StatusExpired && d.Actor == api.ActorWithdrawn:
		v.Source = api.SourceGate // the run stopped: nobody decided, and no time ran out
	case status == api.StatusExpired:
		v.Source = api.SourceExpiry
	}
	if v.Effect == api.EffectDeny {
		v.Message = api.DenyMessage(v, "")
	}
	_, err := decideCall(t, a.ToolUseID, v)
	if IsAlreadyDecided(err) {
		err = nil // the call was settled another way (e.g. a deny by the gate); the approval still records this
	}
	return a, d, err
}

// expire settles an approval whose time is up: a deny approval_expired,
// or for a hand-off approval the call handed to Claude Code's dialog.
func expire(t *tx, a api.Approval) (api.Approval, api.Decision, error) {
	return unanswered(t, a, api.ActorExpiry, api.ReasonApprovalExpired)
}

// unanswered settles an approval nobody decided, by actor (the expiry, or
// a run that was stopped: system:withdrawn): a deny with reasonCode, or
// for a hand-off approval the call handed to Claude Code's dialog. Its
// status is expired either way.
func unanswered(t *tx, a api.Approval, actor, reasonCode string) (api.Approval, api.Decision, error) {
	if ho, err := t.Has(handOffKey(a.ID)); err != nil {
		return a, api.Decision{}, err
	} else if ho {
		return handOff(t, a, actor)
	}
	return settle(t, a, api.StatusExpired, api.Decision{Decision: api.EffectDeny, Actor: actor, ReasonCode: reasonCode})
}

// handOff settles a hand-off approval without a decision in toolgate, and
// records in the same transaction that nothing was written back.
func handOff(t *tx, a api.Approval, actor string) (api.Approval, api.Decision, error) {
	a, d, err := settle(t, a, api.StatusExpired, api.Decision{Decision: api.EffectAsk, Actor: actor, ReasonCode: api.ReasonHandedToClaude})
	if err != nil {
		return a, d, err
	}
	wb := api.WriteBack{ToolUseID: a.ToolUseID, Effect: api.EffectAsk, ReasonCode: api.ReasonHandedToClaude}
	if a.MatchedRule != nil {
		wb.RuleID = *a.MatchedRule
	}
	_, err = putWriteBack(t, wb)
	return a, d, err
}

// HandOff ends a pending hand-off approval before its time: the hook that
// waited on it is gone (Claude Code's own dialog answered first, or the
// hook was stopped), so nothing toolgate decides now could take effect.
// The approval becomes expired with reason_code handed_to_claude and the
// given actor, and the call's write-back says nothing was written back;
// one that is not pending fails with a *TerminalError.
func (l *Ledger) HandOff(ctx context.Context, approvalID, actor string) (api.Approval, api.Decision, error) {
	return l.decideApproval(ctx, approvalID, func(t *tx, a api.Approval) (api.Approval, api.Decision, error) {
		ho, err := t.Has(handOffKey(a.ID))
		if err != nil {
			return a, api.Decision{}, err
		}
		if !ho {
			return a, api.Decision{}, fmt.Errorf("approval %s is not a hand-off approval", a.ID)
		}
		return handOff(t, a, actor)
	})
}

// Expired is an approval that ExpireDue expired, with its decision.
type Expired struct {
	Approval api.Approval
	Decision api.Decision
}

// ExpireDue marks every pending approval whose expires_at is at or before
// now as expired, writes its decision (actor system:expiry, reason_code
// approval_expired) and the call's deny, and returns them.
func (l *Ledger) ExpireDue(ctx context.Context, now time.Time) ([]Expired, error) {
	const chunk = 128
	var all []Expired
	for {
		batch, err := write(ctx, l, func(t *tx) ([]Expired, error) {
			var batch []Expired
			due, err := dueApprovals(t, now, chunk)
			if err != nil {
				return nil, err
			}
			for _, a := range due {
				a, d, err := expire(t, a)
				if err != nil {
					return nil, err
				}
				batch = append(batch, Expired{a, d})
			}
			return batch, nil
		})
		all = append(all, batch...)
		if err != nil || len(batch) < chunk {
			return all, err
		}
	}
}

// unansweredWhere settles every pending approval that match says to as
// unanswered, by actor with reasonCode.
func unansweredWhere(t *tx, match func(api.Approval) bool, actor, reasonCode string) ([]Expired, error) {
	var ids []string
	t.Keys(pendingPrefix, pendingPrefix, func(key []byte) bool {
		if rest := string(key[len(pendingPrefix):]); len(rest) > 9 {
			ids = append(ids, rest[9:])
		}
		return true
	})
	var out []Expired
	for _, id := range ids {
		var a api.Approval
		if _, err := t.Get(approvalKey(id), &a); err != nil {
			return nil, err
		}
		if !match(a) {
			continue
		}
		a, d, err := unanswered(t, a, actor, reasonCode)
		if err != nil {
			return nil, err
		}
		out = append(out, Expired{a, d})
	}
	return out, nil
}

// dueApprovals returns up to limit pending approvals that expire at or before now.
func dueApprovals(t *tx, now time.Time, limit int) ([]api.Approval, error) {
	var ids []string
	t.Keys(pendingPrefix, pendingPrefix, func(key []byte) bool {
		rest := string(key[len(pendingPrefix):])
		if len(rest) < 9 || int64(binary.BigEndian.Uint64([]byte(rest[:8]))) > now.UnixNano() {
			return false
		}
		ids = append(ids, strings.TrimPrefix(rest[8:], "/"))
		return len(ids) < limit
	})
	out := make([]api.Approval, 0, len(ids))
	for _, id := range ids {
		var a api.Approval
		if _, err := t.Get(approvalKey(id), &a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// Pending lists every pending approval, the soonest to expire first. The
// daemon re-arms its expiry timers from it after a restart.
func (l *Ledger) Pending(ctx context.Context) ([]api.Approval, error) {
	var out []api.Approval
	err := l.store.Scan(ctx, pendingPrefix, pendingPrefix, func(key, _ []byte) error {
		id := string(key[len(pendingPrefix)+9:])
		var a api.Approval
		if err := l.read(approvalKey(id), &a); err != nil {
			return err
		}
		out = append(out, a)
		return nil
	})
	return out, err
}

// Approval returns an approval record, or ErrNotFound.
func (l *Ledger) Approval(ctx context.Context, id string) (api.Approval, error) {
	var a api.Approval
	return a, named("approval", id, l.read(approvalKey(id), &a))
}

// ApprovalFor returns the approval record of a call, or ErrNotFound.
func (l *Ledger) ApprovalFor(ctx context.Context, toolUseID string) (api.Approval, error) {
	var id string
	if err := l.read(approvalOfCallKey(toolUseID), &id); err != nil {
		return api.Approval{}, named("approval of call", toolUseID, err)
	}
	return l.Approval(ctx, id)
}

// DecisionFor returns the decision on an approval, or ErrNotFound while
// it is pending.
func (l *Ledger) DecisionFor(ctx context.Context, approvalID string) (api.Decision, error) {
	var d api.Decision
	err := l.read(decisionKey(approvalID), &d)
	return readDecision(d), named("decision on approval", approvalID, err)
}

// readDecision is a stored decision as it reads today. Decisions stored
// before protocol 4 said what became of the record (approved, denied,
// expired) where the approval flow's decision says what becomes of the call:
// approved is allow, denied is deny, and expired is deny (approval_expired)
// or, handed to Claude Code's dialog, ask. The audit chain keeps them as
// they were written: its events are hashed.
func readDecision(d api.Decision) api.Decision {
	switch string(d.Decision) {
	case api.StatusApproved:
		d.Decision = api.EffectAllow
	case api.StatusDenied:
		d.Decision = api.EffectDeny
	case api.StatusExpired:
		d.Decision = api.EffectDeny
		if d.ReasonCode == api.ReasonHandedToClaude {
			d.Decision = api.EffectAsk
		}
	}
	return d
}
