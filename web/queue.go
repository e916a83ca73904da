package web

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/fleet"
	"github.com/toolgate/toolgate/render"
)

// Item is one ask as the page shows it: the input rendered as render shows
// it to a person (a command as the command, an edit as a diff, control
// characters visible), never as markup.
type Item struct {
	ID        string     `json:"id"`
	Host      string     `json:"host,omitempty"`
	Session   string     `json:"session"`
	ToolUseID string     `json:"tool_use_id"`
	Tool      string     `json:"tool"`
	Rule      string     `json:"rule"` // "" when the policy's default asked
	Lines     []string   `json:"lines"`
	Status    string     `json:"status"`
	ExpiresAt time.Time  `json:"expires_at"`
	Decision  string     `json:"decision,omitempty"`
	Actor     string     `json:"actor,omitempty"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
}

// State is what the page shows: what waits, and what was decided lately.
type State struct {
	Source  string `json:"source"` // "local" or "fleet"
	Pending []Item `json:"pending"`
	Recent  []Item `json:"recent"`
}

// Queue is where the asks come from and decisions go: the local daemon's
// approver socket, or the fleet's PostgreSQL.
type Queue interface {
	State(ctx context.Context) (State, error)
	// Decide decides an ask; a refusal (decided, expired, unknown, not
	// allowed) is a *Refusal.
	Decide(ctx context.Context, id string, allow bool, note string) error
	// Changes is signalled on every change, and closed when the source is lost.
	Changes(ctx context.Context) (<-chan struct{}, error)
}

// Refusal is a decision the queue refused, with the HTTP status it means.
type Refusal struct {
	Status  int
	Message string
}

func (r *Refusal) Error() string { return r.Message }

func itemOf(host string, d api.ApprovalDetail) Item {
	a := d.Approval
	it := Item{ID: a.ID, Host: host, Session: a.SessionID, ToolUseID: a.ToolUseID, Tool: a.ToolName, Status: a.Status,
		ExpiresAt: a.ExpiresAt, Lines: render.Lines(a.ToolName, a.Input, 1<<16, 5000)}
	if a.MatchedRule != nil {
		it.Rule = *a.MatchedRule
	}
	if d.Decision != nil {
		at := d.Decision.DecidedAt
		it.Decision, it.Actor, it.DecidedAt = string(d.Decision.Decision), d.Decision.Actor, &at
	}
	return it
}

// FleetQueue is the fleet's queue: every host's asks, decided through
// Postgres's arbiter with the approver's role.
type FleetQueue struct{ Approver *fleet.Approver }

func (q FleetQueue) State(ctx context.Context) (State, error) {
	st := State{Source: "fleet", Pending: []Item{}, Recent: []Item{}}
	pending, err := q.Approver.Pending(ctx)
	if err != nil {
		return st, err
	}
	for _, a := range pending {
		st.Pending = append(st.Pending, itemOf(a.Host, a.ApprovalDetail))
	}
	recent, err := q.Approver.Recent(ctx, 20)
	for _, a := range recent {
		st.Recent = append(st.Recent, itemOf(a.Host, a.ApprovalDetail))
	}
	return st, err
}

func (q FleetQueue) Decide(ctx context.Context, id string, allow bool, note string) error {
	_, err := q.Approver.Decide(ctx, id, allow, note)
	var r *fleet.RefusedError
	switch {
	case errors.As(err, &r) && r.NotFound:
		return &Refusal{404, r.Message}
	case errors.As(err, &r) && r.Permission:
		return &Refusal{403, r.Message}
	case errors.As(err, &r):
		return &Refusal{409, r.Message}
	}
	return err
}

func (q FleetQueue) Changes(ctx context.Context) (<-chan struct{}, error) {
	return q.Approver.Changes(ctx)
}

// LocalQueue is this machine's daemon's queue, on its approver socket:
// the daemon reads who decides from this process's credentials.
type LocalQueue struct {
	Client *client.Client

	mu     sync.Mutex
	recent []Item // decided or expired while the page ran, newest first
}

func (q *LocalQueue) State(ctx context.Context) (State, error) {
	st := State{Source: "local", Pending: []Item{}}
	pending, err := q.Client.Pending(ctx)
	if err != nil {
		return st, err
	}
	for _, d := range pending {
		st.Pending = append(st.Pending, itemOf("", d))
	}
	q.mu.Lock()
	st.Recent = append([]Item{}, q.recent...)
	q.mu.Unlock()
	return st, nil
}

func (q *LocalQueue) Decide(ctx context.Context, id string, allow bool, note string) error {
	req := api.DecideRequest{Decision: "deny", Reason: note}
	if allow {
		req.Decision = "approve"
	}
	_, err := q.Client.Decide(ctx, id, req)
	var se *client.StatusError
	if errors.As(err, &se) {
		switch se.Err.Code {
		case "not_found":
			return &Refusal{404, se.Err.Message}
		case "self_approval", "contained", "fleet", "forbidden":
			return &Refusal{403, se.Err.Message}
		default:
			return &Refusal{409, se.Err.Message}
		}
	}
	return err
}

func (q *LocalQueue) Changes(ctx context.Context) (<-chan struct{}, error) {
	w, err := q.Client.Watch(ctx)
	if err != nil {
		return nil, err
	}
	ch := make(chan struct{}, 1)
	go func() {
		defer close(ch)
		defer w.Close()
		for {
			ev, err := w.Next()
			if err != nil {
				return
			}
			if ev.Approval != nil && (ev.Type == api.EventDecided || ev.Type == api.EventExpired) {
				q.mu.Lock()
				q.recent = append([]Item{itemOf("", *ev.Approval)}, q.recent...)
				q.recent = q.recent[:min(len(q.recent), 20)]
				q.mu.Unlock()
			}
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	return ch, nil
}
