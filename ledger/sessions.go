package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

func sessionKey(id string) string { return "s/" + id }

// StartSession records a session. Starting one that exists returns it
// unchanged (existed is true): an installed hook may announce the same
// Claude session many times.
func (l *Ledger) StartSession(ctx context.Context, s Session) (Session, bool, error) {
	if s.ID == "" {
		return Session{}, false, fmt.Errorf("start session: an id is required")
	}
	type out struct {
		s       Session
		existed bool
	}
	v, err := l.write(ctx, func(t *tx) (any, error) {
		var existing Session
		found, err := t.get(sessionKey(s.ID), &existing)
		if err != nil || found {
			return out{existing, found}, err
		}
		if s.StartedAt.IsZero() {
			s.StartedAt = t.now
		}
		if err := t.put(sessionKey(s.ID), s); err != nil {
			return nil, err
		}
		return out{s, false}, t.event(KindSessionStarted, s.ID, s)
	})
	if v == nil {
		return Session{}, false, err
	}
	o := v.(out)
	return o.s, o.existed, err
}

// UpdateSession changes a session with fn (to record Claude's session id,
// or its end) and records the new state in the audit.
func (l *Ledger) UpdateSession(ctx context.Context, id string, fn func(s *Session)) (Session, error) {
	v, err := l.write(ctx, func(t *tx) (any, error) {
		var s Session
		found, err := t.get(sessionKey(id), &s)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
		}
		fn(&s)
		if err := t.put(sessionKey(id), s); err != nil {
			return nil, err
		}
		return s, t.event(KindSessionUpdated, id, s)
	})
	s, _ := v.(Session)
	return s, err
}

// EndSession records the end of a session.
func (l *Ledger) EndSession(ctx context.Context, id string, at time.Time) (Session, error) {
	return l.UpdateSession(ctx, id, func(s *Session) {
		if s.EndedAt == nil {
			at := at.UTC()
			s.EndedAt = &at
		}
	})
}

// Session returns a session, or ErrNotFound.
func (l *Ledger) Session(ctx context.Context, id string) (Session, error) {
	var s Session
	return s, l.read(sessionKey(id), &s)
}

func policyKey(sha string) string { return "pol/" + sha }

// StorePolicy keeps a policy document by its sha256, once, so that every
// decision can be traced to the exact bytes that made it.
func (l *Ledger) StorePolicy(ctx context.Context, sha string, doc []byte) error {
	_, err := l.write(ctx, func(t *tx) (any, error) {
		var existing json.RawMessage
		found, err := t.get(policyKey(sha), &existing)
		if err != nil || found {
			return nil, err
		}
		if err := t.set(policyKey(sha), doc); err != nil { // the exact bytes: they are what the sha256 is of
			return nil, err
		}
		return nil, t.event(KindPolicyStored, sha, json.RawMessage(doc))
	})
	return err
}

// Policy returns a stored policy document, or ErrNotFound.
func (l *Ledger) Policy(ctx context.Context, sha string) ([]byte, error) {
	var doc []byte
	err := l.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(policyKey(sha)))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return fmt.Errorf("policy %s: %w", sha, ErrNotFound)
		}
		if err != nil {
			return err
		}
		doc, err = item.ValueCopy(nil)
		return err
	})
	return doc, err
}
