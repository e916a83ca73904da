package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// read decodes the value at key into v, or returns ErrNotFound.
func (l *Ledger) read(key string, v any) error {
	return l.db.View(func(txn *badger.Txn) error {
		found, err := getValue(txn, key, v)
		if err == nil && !found {
			err = fmt.Errorf("%s: %w", key, ErrNotFound)
		}
		return err
	})
}

func iteratorOptions(prefix string, values bool) badger.IteratorOptions {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = []byte(prefix)
	opts.PrefetchValues = values
	opts.PrefetchSize = 16
	return opts
}

// scan calls fn with every key and value under prefix, in key order.
func (l *Ledger) scan(ctx context.Context, prefix string, fn func(key, val []byte) error) error {
	return l.scanFrom(ctx, prefix, prefix, fn)
}

// scanFrom is scan starting at the key start.
func (l *Ledger) scanFrom(ctx context.Context, prefix, start string, fn func(key, val []byte) error) error {
	return l.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(iteratorOptions(prefix, true))
		defer it.Close()
		for it.Seek([]byte(start)); it.ValidForPrefix([]byte(prefix)); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			item := it.Item()
			val, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			if err := fn(item.KeyCopy(nil), val); err != nil {
				return err
			}
		}
		return nil
	})
}

// CallQuery selects calls. Zero fields select everything.
type CallQuery struct {
	SessionID string
	From, To  time.Time // proposed_at in [From, To)
	Limit     int
}

// Calls lists calls in tool_use_id order (by session when SessionID is set).
func (l *Ledger) Calls(ctx context.Context, q CallQuery) ([]Call, error) {
	var out []Call
	keep := func(c Call) bool {
		return (q.From.IsZero() || !c.ProposedAt.Before(q.From)) && (q.To.IsZero() || c.ProposedAt.Before(q.To))
	}
	errLimit := errors.New("limit")
	add := func(c Call) error {
		if keep(c) {
			out = append(out, c)
		}
		if q.Limit > 0 && len(out) >= q.Limit {
			return errLimit
		}
		return nil
	}
	var err error
	if q.SessionID != "" {
		prefix := "cs/" + q.SessionID + "/"
		err = l.scan(ctx, prefix, func(key, _ []byte) error {
			var c Call
			if err := l.read(callKey(string(key[len(prefix):])), &c); err != nil {
				return err
			}
			return add(c)
		})
	} else {
		err = l.scan(ctx, "c/", func(_, val []byte) error {
			var c Call
			if err := json.Unmarshal(val, &c); err != nil {
				return err
			}
			return add(c)
		})
	}
	if errors.Is(err, errLimit) {
		err = nil
	}
	return out, err
}

// ApprovalQuery selects approval records. Zero fields select everything.
type ApprovalQuery struct {
	SessionID string
	Status    string
	From, To  time.Time // created_at in [From, To)
}

// Approvals lists approval records in id (creation) order.
func (l *Ledger) Approvals(ctx context.Context, q ApprovalQuery) ([]Approval, error) {
	var out []Approval
	err := l.scan(ctx, "a/", func(_, val []byte) error {
		var a Approval
		if err := json.Unmarshal(val, &a); err != nil {
			return err
		}
		if (q.SessionID == "" || a.SessionID == q.SessionID) && (q.Status == "" || a.Status == q.Status) &&
			(q.From.IsZero() || !a.CreatedAt.Before(q.From)) && (q.To.IsZero() || a.CreatedAt.Before(q.To)) {
			out = append(out, a)
		}
		return nil
	})
	return out, err
}

// Sessions lists every session in id order.
func (l *Ledger) Sessions(ctx context.Context) ([]Session, error) {
	var out []Session
	err := l.scan(ctx, "s/", func(_, val []byte) error {
		var s Session
		if err := json.Unmarshal(val, &s); err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	return out, err
}
