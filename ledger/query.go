package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/toolgate/toolgate/api"
)

// CallQuery selects calls. Zero fields select everything.
type CallQuery struct {
	SessionID string
	From, To  time.Time // proposed_at in [From, To)
	Limit     int
}

// Calls lists calls in tool_use_id order (by session when SessionID is set).
func (l *Ledger) Calls(ctx context.Context, q CallQuery) ([]api.Call, error) {
	var out []api.Call
	errLimit := errors.New("limit")
	add := func(c api.Call) error {
		if (q.From.IsZero() || !c.ProposedAt.Before(q.From)) && (q.To.IsZero() || c.ProposedAt.Before(q.To)) {
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
		err = l.store.Scan(ctx, prefix, prefix, func(key, _ []byte) error {
			c, err := l.Call(ctx, string(key[len(prefix):]))
			if errors.Is(err, ErrNotFound) {
				return nil // pruned since (or a repeat of a call pruned with its own session)
			}
			if err != nil {
				return err
			}
			return add(c)
		})
	} else {
		err = l.store.Scan(ctx, "c/", "c/", func(_, val []byte) error {
			c, err := l.decodeCall(val)
			if errors.Is(err, ErrNotFound) {
				return nil // pruned since the scan read its record
			}
			if err != nil {
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
