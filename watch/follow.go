package watch

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/toolgate/toolgate/supervisor/api"
)

// Client is what watch needs of the daemon (an *api.Client on approve.sock).
type Client interface {
	Watch(ctx context.Context) (*api.Watcher, error)
	Decide(ctx context.Context, id string, r api.DecideRequest) (api.ApprovalDetail, error)
}

// connected says that the event stream is up (err nil) or down.
type connected struct{ err error }

// follow reads the daemon's event stream, reconnecting a second after it
// ends, and hands every event (and every change of connection) to send.
// Each new stream starts with a snapshot, so nothing is missed across a
// restart of the daemon.
func follow(ctx context.Context, c Client, send func(any)) {
	for ctx.Err() == nil {
		stream, err := c.Watch(ctx)
		if err == nil {
			send(connected{})
			for {
				ev, err := stream.Next()
				if err != nil {
					break
				}
				send(ev)
			}
			stream.Close()
			err = errors.New("the daemon closed the stream")
		}
		if ctx.Err() != nil {
			return
		}
		send(connected{err})
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// queue is what waits for a person, as the events tell it.
type queue struct {
	pending map[string]api.ApprovalDetail
}

// apply takes in one event; it returns the approval it was about, if any.
func (q *queue) apply(ev api.WatchEvent) {
	switch ev.Type {
	case api.EventSnapshot:
		q.pending = map[string]api.ApprovalDetail{}
		for _, d := range ev.Pending {
			q.pending[d.Approval.ID] = d
		}
	case api.EventRequested:
		if q.pending == nil {
			q.pending = map[string]api.ApprovalDetail{}
		}
		q.pending[ev.Approval.Approval.ID] = *ev.Approval
	case api.EventDecided, api.EventExpired:
		delete(q.pending, ev.Approval.Approval.ID)
	}
}

// list is what waits, the soonest to expire first.
func (q *queue) list() []api.ApprovalDetail {
	out := make([]api.ApprovalDetail, 0, len(q.pending))
	for _, d := range q.pending {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Approval, out[j].Approval
		if !a.ExpiresAt.Equal(b.ExpiresAt) {
			return a.ExpiresAt.Before(b.ExpiresAt)
		}
		return a.ID < b.ID
	})
	return out
}

// ruleOf names the rule that asked.
func ruleOf(d api.ApprovalDetail) string {
	if d.Approval.MatchedRule == nil {
		return "the default"
	}
	return "rule " + *d.Approval.MatchedRule
}

// left is the time until an approval expires, rounded for a person.
func left(d api.ApprovalDetail, now time.Time) string {
	l := d.Approval.ExpiresAt.Sub(now)
	if l <= 0 {
		return "expiring"
	}
	return l.Round(time.Second).String()
}

// decisionError is the daemon's reason for refusing a decision.
func decisionError(err error) string {
	var se *api.StatusError
	if errors.As(err, &se) {
		return se.Err.Message
	}
	return err.Error()
}
