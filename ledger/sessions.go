package ledger

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/api"
)

func sessionKey(id string) string { return "s/" + id }

// StartSession records a session. Starting one that exists returns it
// unchanged (existed is true): an installed hook may announce the same
// Claude session many times.
func (l *Ledger) StartSession(ctx context.Context, s api.Session) (api.Session, bool, error) {
	if s.ID == "" {
		return api.Session{}, false, fmt.Errorf("start session: an id is required")
	}
	type out struct {
		s       api.Session
		existed bool
	}
	o, err := write(ctx, l, func(t *tx) (out, error) {
		var existing api.Session
		found, err := t.Get(sessionKey(s.ID), &existing)
		if err != nil || found {
			return out{existing, found}, err
		}
		if s.StartedAt.IsZero() {
			s.StartedAt = t.Now()
		}
		if err := t.Put(sessionKey(s.ID), s); err != nil {
			return out{}, err
		}
		return out{s, false}, t.event(KindSessionStarted, s.ID, s)
	})
	return o.s, o.existed, err
}

// UpdateSession changes a session with fn (to record Claude's session id,
// or its end) and records the new state in the audit.
func (l *Ledger) UpdateSession(ctx context.Context, id string, fn func(s *api.Session)) (api.Session, error) {
	return write(ctx, l, func(t *tx) (api.Session, error) {
		var s api.Session
		found, err := t.Get(sessionKey(id), &s)
		if err != nil {
			return api.Session{}, err
		}
		if !found {
			return api.Session{}, fmt.Errorf("session %s: %w", id, ErrNotFound)
		}
		fn(&s)
		if err := t.Put(sessionKey(id), s); err != nil {
			return api.Session{}, err
		}
		return s, t.event(KindSessionUpdated, id, s)
	})
}

// EndSession records the end of a session (reason api.EndEnded,
// api.EndAbandoned or api.EndInterrupted) and, in the same transaction,
// settles every approval of it that still waits: nobody may decide a call
// of a session that is over. They expire, or are withdrawn when the run
// was interrupted. A session ended before stays as it was.
func (l *Ledger) EndSession(ctx context.Context, id, reason string) (api.Session, []Expired, error) {
	type out struct {
		s       api.Session
		expired []Expired
	}
	o, err := write(ctx, l, func(t *tx) (out, error) {
		var s api.Session
		found, err := t.Get(sessionKey(id), &s)
		if err != nil {
			return out{}, err
		}
		if !found {
			return out{}, fmt.Errorf("session %s: %w", id, ErrNotFound)
		}
		if s.EndedAt != nil {
			return out{s, nil}, nil
		}
		at := t.Now()
		s.EndedAt, s.EndReason = &at, reason
		if s.DeferredCall != "" && (reason == api.EndEnded || reason == api.EndInterrupted) {
			s.EndReason = api.EndDeferred // its call waits for a person, and toolgate resume
		}
		if err := t.Put(sessionKey(id), s); err != nil {
			return out{}, err
		}
		if err := t.event(KindSessionUpdated, id, s); err != nil {
			return out{}, err
		}
		if s.EndReason == api.EndDeferred {
			return out{s, nil}, nil
		}
		actor, reasonCode := api.ActorExpiry, api.ReasonApprovalExpired
		if reason == api.EndInterrupted {
			actor, reasonCode = api.ActorWithdrawn, api.ReasonApprovalWithdrawn
		}
		expired, err := unansweredWhere(t, func(a api.Approval) bool { return a.SessionID == id }, actor, reasonCode)
		return out{s, expired}, err
	})
	return o.s, o.expired, err
}

// Defer records that a session's ask ends its run (--on-ask defer): the
// call is marked deferred, and the session waits on it (DeferredCall) once
// it ends, with Claude Code's session id to resume. A session defers one
// call: ok is false when it deferred another already.
func (l *Ledger) Defer(ctx context.Context, sessionID, toolUseID, claudeSessionID string) (ok bool, err error) {
	return write(ctx, l, func(t *tx) (bool, error) {
		var s api.Session
		found, err := t.Get(sessionKey(sessionID), &s)
		if err != nil || !found {
			return false, cmp.Or(err, fmt.Errorf("session %s: %w", sessionID, ErrNotFound))
		}
		if s.DeferredCall != "" {
			return s.DeferredCall == toolUseID, nil
		}
		c, found, err := getCall(t, toolUseID)
		if err != nil || !found {
			return false, cmp.Or(err, fmt.Errorf("call %s: %w", toolUseID, ErrNotFound))
		}
		var approvalID string
		var a api.Approval
		if found, err := t.Get(approvalOfCallKey(toolUseID), &approvalID); err != nil || !found {
			return false, cmp.Or(err, fmt.Errorf("the approval of %s: %w", toolUseID, ErrNotFound))
		}
		if _, err := t.Get(approvalKey(approvalID), &a); err != nil {
			return false, err
		}
		c.Deferred, c.ApprovalID, c.ExpiresAt = true, a.ID, &a.ExpiresAt
		if err := putCall(t, c); err != nil {
			return false, err
		}
		s.DeferredCall = toolUseID
		if s.ClaudeSessionID == "" {
			s.ClaudeSessionID = claudeSessionID
		}
		if err := t.Put(sessionKey(sessionID), s); err != nil {
			return false, err
		}
		if err := t.event(KindCallDeferred, toolUseID, map[string]string{"tool_use_id": toolUseID, "session_id": sessionID}); err != nil {
			return false, err
		}
		return true, t.event(KindSessionUpdated, sessionID, s)
	})
}

// ErrNotDeferred is a resume of a session that is not (or no longer)
// waiting on a deferred call: another resume took it up first.
var ErrNotDeferred = errors.New("the session is not waiting on a deferred call")

// ResumeSession takes up a deferred session again, once: it is no longer
// ended, and waits on nothing; fn sets what else changes (its settings,
// for its new supervisor). A second resume gets ErrNotDeferred.
func (l *Ledger) ResumeSession(ctx context.Context, id string, fn func(s *api.Session)) (api.Session, error) {
	return write(ctx, l, func(t *tx) (api.Session, error) {
		var s api.Session
		found, err := t.Get(sessionKey(id), &s)
		if err != nil || !found {
			return api.Session{}, cmp.Or(err, fmt.Errorf("session %s: %w", id, ErrNotFound))
		}
		if s.EndReason != api.EndDeferred {
			return api.Session{}, fmt.Errorf("session %s: %w", id, ErrNotDeferred)
		}
		at := t.Now()
		s.EndedAt, s.EndReason, s.DeferredCall, s.ResumedAt, s.ClaudePID = nil, "", "", &at, 0
		fn(&s)
		if err := t.Put(sessionKey(id), s); err != nil {
			return api.Session{}, err
		}
		return s, t.event(KindSessionUpdated, id, s)
	})
}

// RecordIncident keeps an incident in the audit, about subject (a session
// or an approval).
func (l *Ledger) RecordIncident(ctx context.Context, subject string, inc api.Incident) error {
	_, err := write(ctx, l, func(t *tx) (struct{}, error) { return struct{}{}, t.event(KindIncident, subject, inc) })
	return err
}

// Session returns a session, or ErrNotFound.
func (l *Ledger) Session(ctx context.Context, id string) (api.Session, error) {
	var s api.Session
	return s, named("session", id, l.read(sessionKey(id), &s))
}

// Sessions lists every session in id order.
func (l *Ledger) Sessions(ctx context.Context) ([]api.Session, error) {
	var out []api.Session
	err := l.store.Scan(ctx, "s/", "s/", func(_, val []byte) error {
		var s api.Session
		if err := json.Unmarshal(val, &s); err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

func policyKey(sha string) string { return "pol/" + sha }

// StorePolicy keeps a policy document by its sha256, once, so that every
// decision can be traced to the exact bytes that made it.
func (l *Ledger) StorePolicy(ctx context.Context, sha string, doc []byte) error {
	_, err := write(ctx, l, func(t *tx) (struct{}, error) {
		found, err := t.Has(policyKey(sha))
		if err != nil || found {
			return struct{}{}, err
		}
		if err := t.Set(policyKey(sha), doc); err != nil { // the exact bytes: they are what the sha256 is of
			return struct{}{}, err
		}
		return struct{}{}, t.event(KindPolicyStored, sha, json.RawMessage(doc))
	})
	return err
}

// Policy returns a stored policy document, or ErrNotFound.
func (l *Ledger) Policy(ctx context.Context, sha string) ([]byte, error) {
	return l.store.ReadRaw(policyKey(sha))
}
