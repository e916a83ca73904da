package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
)

// Source is the fleet's queue as the terminal and desktop approvers
// (toolgate watch, toolgate notify) read a daemon's: an client.Approver whose
// watch stream is made from Postgres's notifications, and whose decisions
// go through the arbiter.
type Source struct{ Approver *Approver }

var _ client.Approver = Source{}

// Approval returns one ask with its decision.
func (s Source) Approval(ctx context.Context, id string) (api.ApprovalDetail, error) {
	a, err := s.Approver.Ask(ctx, id)
	return a.ApprovalDetail, statusError(err)
}

// Decide decides an ask through toolgate.decide; a refusal is an
// *client.StatusError with the codes a daemon gives.
func (s Source) Decide(ctx context.Context, id string, r api.DecideRequest) (api.ApprovalDetail, error) {
	if _, err := s.Approver.Decide(ctx, id, r.Decision == "approve", r.Reason); err != nil {
		return api.ApprovalDetail{}, statusError(err)
	}
	return s.Approval(ctx, id)
}

// statusError turns the arbiter's refusals into a daemon's.
func statusError(err error) error {
	var r *RefusedError
	if !errors.As(err, &r) {
		return err
	}
	e := &client.StatusError{Status: http.StatusConflict, Err: api.Error{Message: r.Message, Code: "already_decided"}}
	switch {
	case r.NotFound:
		e.Status, e.Err.Code = http.StatusNotFound, "not_found"
	case r.Expired:
		e.Err.Code = "expired"
	case r.Permission:
		e.Status, e.Err.Code = http.StatusForbidden, "forbidden"
	}
	return e
}

// Watch streams the fleet's queue as a daemon's watch stream: a snapshot
// of what is pending, then an event for each ask added, decided or
// expired, as Postgres announces them (LISTEN toolgate_queue).
func (s Source) Watch(ctx context.Context) (*client.Watcher, error) {
	ctx, cancel := context.WithCancel(ctx)
	changes, err := s.Approver.Changes(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	pending, err := s.Approver.Pending(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	r, w := io.Pipe()
	go func() {
		defer cancel()
		enc := json.NewEncoder(w)
		known := map[string]bool{}
		snap := api.WatchEvent{Type: api.EventSnapshot, Time: time.Now().UTC(), Pending: []api.ApprovalDetail{}}
		for _, a := range pending {
			known[a.Approval.ID] = true
			snap.Pending = append(snap.Pending, a.ApprovalDetail)
		}
		if enc.Encode(snap) != nil {
			return
		}
		for range changes {
			if err := s.diff(ctx, enc, known); err != nil {
				w.CloseWithError(err)
				return
			}
		}
		w.CloseWithError(errors.New("the fleet's database closed the stream"))
	}()
	return client.NewWatcher(closer{r, cancel}), nil
}

// diff writes an event for each ask that became or stopped being pending.
func (s Source) diff(ctx context.Context, enc *json.Encoder, known map[string]bool) error {
	pending, err := s.Approver.Pending(ctx)
	if err != nil {
		return err
	}
	now := map[string]bool{}
	for _, a := range pending {
		now[a.Approval.ID] = true
		if !known[a.Approval.ID] {
			d := a.ApprovalDetail
			if err := enc.Encode(api.WatchEvent{Type: api.EventRequested, Time: time.Now().UTC(), Approval: &d}); err != nil {
				return err
			}
		}
	}
	for id := range known {
		if now[id] {
			continue
		}
		a, err := s.Approver.Ask(ctx, id)
		if err != nil {
			return err
		}
		kind := api.EventDecided
		if a.Decision == nil {
			kind = api.EventExpired
		}
		d := a.ApprovalDetail
		if err := enc.Encode(api.WatchEvent{Type: kind, Time: time.Now().UTC(), Approval: &d}); err != nil {
			return err
		}
	}
	for id := range known {
		delete(known, id)
	}
	for id := range now {
		known[id] = true
	}
	return nil
}

// closer ends the stream's goroutine when the watcher is closed.
type closer struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (c closer) Close() error { c.cancel(); return c.PipeReader.Close() }
