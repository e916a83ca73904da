package client

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/toolgate/toolgate/api"
)

// FollowSource is what Follow needs of the daemon: a *Client on the
// approvers' socket.
type FollowSource interface {
	Watch(ctx context.Context) (*Watcher, error)
	Approval(ctx context.Context, id string) (api.ApprovalDetail, error)
}

// Approver is what a person's tool (watch, notify) needs of the daemon: a
// *Client on the approvers' socket.
type Approver interface {
	FollowSource
	Decide(ctx context.Context, id string, r api.DecideRequest) (api.ApprovalDetail, error)
}

// Change is one change of what waits for a person, or of the connection
// to the daemon, as Follow tells it.
type Change struct {
	// Connected is false when the stream just went down (Err says why);
	// a Change that comes with an event is always connected.
	Connected bool
	Err       error
	// Added are approvals that became pending; Removed are approvals that
	// stopped being pending (decided or expired: their Status and Decision
	// say how), including those decided while the stream was down.
	Added, Removed []api.ApprovalDetail
	// Pending is everything pending after the change, the soonest to
	// expire first.
	Pending []api.ApprovalDetail
}

// ReconnectDelay is how long Follow waits before it connects again.
const ReconnectDelay = time.Second

// Follow reads the daemon's watch stream until ctx ends, reconnecting
// after ReconnectDelay whenever it ends, and calls fn with every change of
// the pending set and every change of the connection. Each stream starts
// with a snapshot, which Follow compares with what it knew: approvals that
// stopped being pending while it was away are reported Removed, with their
// final state. An event that changes nothing (a second "decided" for an
// approval already settled, as a refused decision may cause) is not
// reported. fn is called from Follow's goroutine, one change at a time.
func Follow(ctx context.Context, src FollowSource, fn func(Change)) {
	f := follower{src: src, fn: fn, pending: map[string]api.ApprovalDetail{}}
	for ctx.Err() == nil {
		w, err := src.Watch(ctx)
		if err == nil {
			stop := context.AfterFunc(ctx, func() { w.Close() })
			for {
				ev, err := w.Next()
				if err != nil {
					break
				}
				f.apply(ctx, ev)
			}
			stop()
			w.Close()
			err = errors.New("the daemon closed the stream")
		}
		if ctx.Err() != nil {
			return
		}
		if !f.saidDown {
			f.saidDown = true
			fn(Change{Err: err, Pending: f.list()})
		}
		t := time.NewTimer(ReconnectDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

type follower struct {
	src      FollowSource
	fn       func(Change)
	pending  map[string]api.ApprovalDetail
	saidDown bool
}

func (f *follower) apply(ctx context.Context, ev api.WatchEvent) {
	var c Change
	switch ev.Type {
	case api.EventSnapshot:
		now := map[string]api.ApprovalDetail{}
		for _, d := range ev.Pending {
			now[d.Approval.ID] = d
			if _, known := f.pending[d.Approval.ID]; !known {
				c.Added = append(c.Added, d)
			}
		}
		for id, d := range f.pending {
			if _, still := now[id]; still {
				continue
			}
			if final, err := f.src.Approval(ctx, id); err == nil {
				d = final
			}
			c.Removed = append(c.Removed, d)
		}
		f.pending = now
		sortByExpiry(c.Added)
		sortByExpiry(c.Removed)
	case api.EventRequested:
		if ev.Approval == nil || ev.Approval.Approval.Status != api.StatusPending {
			return
		}
		if _, known := f.pending[ev.Approval.Approval.ID]; known {
			return
		}
		f.pending[ev.Approval.Approval.ID] = *ev.Approval
		c.Added = []api.ApprovalDetail{*ev.Approval}
	case api.EventDecided, api.EventExpired:
		if ev.Approval == nil {
			return
		}
		if _, known := f.pending[ev.Approval.Approval.ID]; !known {
			return // settled before: nothing changed
		}
		delete(f.pending, ev.Approval.Approval.ID)
		c.Removed = []api.ApprovalDetail{*ev.Approval}
	default:
		return
	}
	// A snapshot is always told: it says the stream is up.
	f.saidDown = false
	c.Connected, c.Pending = true, f.list()
	f.fn(c)
}

// list is what is pending, the soonest to expire first.
func (f *follower) list() []api.ApprovalDetail {
	out := make([]api.ApprovalDetail, 0, len(f.pending))
	for _, d := range f.pending {
		out = append(out, d)
	}
	sortByExpiry(out)
	return out
}

func sortByExpiry(list []api.ApprovalDetail) {
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i].Approval, list[j].Approval
		if !a.ExpiresAt.Equal(b.ExpiresAt) {
			return a.ExpiresAt.Before(b.ExpiresAt)
		}
		return a.ID < b.ID
	})
}
