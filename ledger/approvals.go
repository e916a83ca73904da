package ledger

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

func approvalKey(id string) string         { return "a/" + id }
func approvalOfCallKey(tuid string) string { return "ac/" + tuid }
func decisionKey(id string) string         { return "d/" + id }
func handOffKey(id string) string          { return "ah/" + id }

const pendingPrefix = "ap/"

func pendingKey(a Approval) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(a.ExpiresAt.UnixNano()))
	return pendingPrefix + string(b[:]) + "/" + a.ID
}

// NewApprovalID returns a fresh approval id: "apr_" and a ULID.
func NewApprovalID() string { return "apr_" + ulid.Make().String() }

// ApprovalRequest asks for a person's decision on a proposed call.
type ApprovalRequest struct {
	ToolUseID     string
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
func (l *Ledger) CreateApproval(ctx context.Context, r ApprovalRequest) (a Approval, existed bool, err error) {
	if r.Timeout <= 0 {
		return Approval{}, false, fmt.Errorf("create approval: the timeout must be positive")
	}
	type out struct {
		a       Approval
		existed bool
	}
	v, err := l.write(ctx, func(t *tx) (any, error) {
		var id string
		found, err := t.get(approvalOfCallKey(r.ToolUseID), &id)
		if err != nil {
			return nil, err
		}
		if found {
			var a Approval
			if _, err := t.get(approvalKey(id), &a); err != nil {
				return nil, err
			}
			return out{a, true}, nil
		}
		var c Call
		if found, err := t.get(callKey(r.ToolUseID), &c); err != nil || !found {
			if err == nil {
				err = fmt.Errorf("create approval for %s: %w", r.ToolUseID, ErrNotFound)
			}
			return nil, err
		}
		a := Approval{ID: NewApprovalID(), SessionID: c.SessionID, ToolUseID: c.ToolUseID, ToolName: c.ToolName,
			Input: c.Input, PolicyVersion: r.PolicyVersion, Status: StatusPending,
			CreatedAt: t.now, ExpiresAt: t.now.Add(r.Timeout)}
		if r.MatchedRule != "" {
			rule := r.MatchedRule
			a.MatchedRule = &rule
		}
		for key, val := range map[string]any{approvalKey(a.ID): a, approvalOfCallKey(a.ToolUseID): a.ID} {
			if err := t.put(key, val); err != nil {
				return nil, err
			}
		}
		if err := t.set(pendingKey(a), nil); err != nil {
			return nil, err
		}
		if r.HandOff {
			if err := t.set(handOffKey(a.ID), nil); err != nil {
				return nil, err
			}
		}
		return out{a, false}, t.event(KindApprovalCreated, a.ID, a)
	})
	if v == nil {
		return Approval{}, false, err
	}
	o := v.(out)
	return o.a, o.existed, err
}

// Resolution is a person's decision on a pending approval.
type Resolution struct {
	Status     string // StatusApproved or StatusDenied
	Actor      string // who decided, from the OS identity of the caller
	ReasonCode string
	ActorPID   int
	ActorExe   string
	Note       string
}

// Resolve moves a pending approval to approved or denied, stores the
// decision as its own document and records the call's decision, in one
// transaction. A record that is no longer pending fails with a
// *TerminalError; one whose expires_at has passed is expired first, so a
// late approve never allows.
func (l *Ledger) Resolve(ctx context.Context, approvalID string, r Resolution) (Approval, Decision, error) {
	if r.Status != StatusApproved && r.Status != StatusDenied {
		return Approval{}, Decision{}, fmt.Errorf("resolve: status must be approved or denied, not %q", r.Status)
	}
	if r.Actor == "" || r.ReasonCode == "" {
		return Approval{}, Decision{}, fmt.Errorf("resolve: actor and reason_code are required")
	}
	return l.decideApproval(ctx, approvalID, func(t *tx, a Approval) (Approval, Decision, error) {
		if !t.now.Before(a.ExpiresAt) {
			a, d, err := expire(t, a)
			if err != nil {
				return a, d, err
			}
			return a, d, &TerminalError{Approval: a, Decision: &d}
		}
		return settle(t, a, r)
	})
}

// decideApproval runs decide on a pending approval, in one transaction: an
// unknown id is ErrNotFound, and one that is no longer pending a
// *TerminalError with the decision that ended it.
func (l *Ledger) decideApproval(ctx context.Context, id string, decide func(*tx, Approval) (Approval, Decision, error)) (Approval, Decision, error) {
	type out struct {
		a Approval
		d Decision
	}
	v, err := l.write(ctx, func(t *tx) (any, error) {
		var a Approval
		found, err := t.get(approvalKey(id), &a)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("approval %s: %w", id, ErrNotFound)
		}
		if a.Status != StatusPending {
			var d Decision
			t.get(decisionKey(a.ID), &d)
			return out{a, d}, &TerminalError{Approval: a, Decision: &d}
		}
		a, d, err := decide(t, a)
		return out{a, d}, err
	})
	if v == nil {
		return Approval{}, Decision{}, err
	}
	o := v.(out)
	return o.a, o.d, err
}

// settle makes a pending approval terminal: the record's status, the
// decision document, the pending index and the call's decision.
func settle(t *tx, a Approval, r Resolution) (Approval, Decision, error) {
	status, actor, reason := r.Status, r.Actor, r.ReasonCode
	d := Decision{ApprovalID: a.ID, ToolUseID: a.ToolUseID, Decision: status, Actor: actor,
		ReasonCode: reason, DecidedAt: t.now, ActorPID: r.ActorPID, ActorExe: r.ActorExe, Note: r.Note}
	if err := t.del(pendingKey(a)); err != nil {
		return a, d, err
	}
	a.Status = status
	if err := t.put(approvalKey(a.ID), a); err != nil {
		return a, d, err
	}
	if err := t.put(decisionKey(a.ID), d); err != nil {
		return a, d, err
	}
	if err := t.event(KindApprovalDecided, a.ID, d); err != nil {
		return a, d, err
	}
	cd := CallDecision{Effect: EffectDeny, ReasonCode: reason, Source: "person", Actor: actor,
		ApprovalID: a.ID, DecidedAt: t.now}
	switch {
	case status == StatusApproved:
		cd.Effect = EffectAllow
	case status == StatusExpired && reason == ReasonHandedToClaude:
		cd.Effect, cd.Source = EffectAsk, SourceClaude // still an ask: Claude Code's dialog decides
	case status == StatusExpired:
		cd.Source = "expiry"
	}
	if a.MatchedRule != nil {
		cd.RuleID = *a.MatchedRule
	}
	_, err := decideCall(t, a.ToolUseID, cd)
	if IsAlreadyDecided(err) {
		err = nil // the call was settled another way (e.g. a deny by the gate); the approval still records this
	}
	return a, d, err
}

// expire settles an approval whose time is up: a deny approval_expired,
// or for a hand-off approval the call handed to Claude Code's dialog.
func expire(t *tx, a Approval) (Approval, Decision, error) {
	r := Resolution{Status: StatusExpired, Actor: ActorExpiry, ReasonCode: ReasonApprovalExpired}
	if ho, err := t.has(handOffKey(a.ID)); err != nil {
		return a, Decision{}, err
	} else if ho {
		return handOff(t, a, ActorExpiry)
	}
	return settle(t, a, r)
}

// handOff settles a hand-off approval without a decision in toolgate, and
// records in the same transaction that nothing was written back.
func handOff(t *tx, a Approval, actor string) (Approval, Decision, error) {
	a, d, err := settle(t, a, Resolution{Status: StatusExpired, Actor: actor, ReasonCode: ReasonHandedToClaude})
	if err != nil {
		return a, d, err
	}
	wb := WriteBack{ToolUseID: a.ToolUseID, Effect: EffectAsk, ReasonCode: ReasonHandedToClaude}
	if a.MatchedRule != nil {
		wb.RuleID = *a.MatchedRule
	}
	_, err = writeBack(t, wb)
	return a, d, err
}

// HandOff ends a pending hand-off approval before its time: the hook that
// waited on it is gone (Claude Code's own dialog answered first, or the
// hook was stopped), so nothing toolgate decides now could take effect.
// The approval becomes expired with reason_code handed_to_claude and the
// given actor, and the call's write-back says nothing was written back;
// one that is not pending fails with a *TerminalError.
func (l *Ledger) HandOff(ctx context.Context, approvalID, actor string) (Approval, Decision, error) {
	return l.decideApproval(ctx, approvalID, func(t *tx, a Approval) (Approval, Decision, error) {
		ho, err := t.has(handOffKey(a.ID))
		if err != nil {
			return a, Decision{}, err
		}
		if !ho {
			return a, Decision{}, fmt.Errorf("approval %s is not a hand-off approval", a.ID)
		}
		return handOff(t, a, actor)
	})
}

// Expired is an approval that ExpireDue expired, with its decision.
type Expired struct {
	Approval Approval
	Decision Decision
}

// ExpireDue marks every pending approval whose expires_at is at or before
// now as expired, writes its decision (actor system:expiry, reason_code
// approval_expired) and the call's deny, and returns them.
func (l *Ledger) ExpireDue(ctx context.Context, now time.Time) ([]Expired, error) {
	var all []Expired
	for {
		v, err := l.write(ctx, func(t *tx) (any, error) {
			var batch []Expired
			due, err := dueApprovals(t, now, 128)
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
		if err != nil {
			return all, err
		}
		batch := v.([]Expired)
		all = append(all, batch...)
		if len(batch) < 128 {
			return all, nil
		}
	}
}

// dueApprovals returns up to limit pending approvals that expire at or before now.
func dueApprovals(t *tx, now time.Time, limit int) ([]Approval, error) {
	it := t.txn.NewIterator(iteratorOptions(pendingPrefix, false))
	defer it.Close()
	var ids []string
	for it.Seek([]byte(pendingPrefix)); it.ValidForPrefix([]byte(pendingPrefix)) && len(ids) < limit; it.Next() {
		key := string(it.Item().Key())
		rest := key[len(pendingPrefix):]
		if len(rest) < 9 || int64(binary.BigEndian.Uint64([]byte(rest[:8]))) > now.UnixNano() {
			break
		}
		ids = append(ids, strings.TrimPrefix(rest[8:], "/"))
	}
	out := make([]Approval, 0, len(ids))
	for _, id := range ids {
		var a Approval
		if _, err := t.get(approvalKey(id), &a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// Pending lists every pending approval, the soonest to expire first. The
// daemon re-arms its expiry timers from it after a restart.
func (l *Ledger) Pending(ctx context.Context) ([]Approval, error) {
	var out []Approval
	err := l.scan(ctx, pendingPrefix, func(key, _ []byte) error {
		id := string(key[len(pendingPrefix)+9:])
		var a Approval
		if err := l.read(approvalKey(id), &a); err != nil {
			return err
		}
		out = append(out, a)
		return nil
	})
	return out, err
}

// Approval returns an approval record, or ErrNotFound.
func (l *Ledger) Approval(ctx context.Context, id string) (Approval, error) {
	var a Approval
	return a, l.read(approvalKey(id), &a)
}

// ApprovalFor returns the approval record of a call, or ErrNotFound.
func (l *Ledger) ApprovalFor(ctx context.Context, toolUseID string) (Approval, error) {
	var id string
	if err := l.read(approvalOfCallKey(toolUseID), &id); err != nil {
		return Approval{}, err
	}
	return l.Approval(ctx, id)
}

// DecisionFor returns the decision on an approval, or ErrNotFound while
// it is pending.
func (l *Ledger) DecisionFor(ctx context.Context, approvalID string) (Decision, error) {
	var d Decision
	return d, l.read(decisionKey(approvalID), &d)
}
