package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/api"
)

// Pending lists the pending approvals.
func (c *Client) Pending(ctx context.Context) ([]api.ApprovalDetail, error) {
	var r api.ApprovalsResponse
	return r.Approvals, c.do(ctx, "GET", "/v1/approvals", nil, &r)
}

// Approval returns one approval with its decision and write-back.
func (c *Client) Approval(ctx context.Context, id string) (api.ApprovalDetail, error) {
	var d api.ApprovalDetail
	return d, c.do(ctx, "GET", "/v1/approvals/"+escape(id), nil, &d)
}

// Decide approves or denies a pending approval.
func (c *Client) Decide(ctx context.Context, id string, r api.DecideRequest) (api.ApprovalDetail, error) {
	var d api.ApprovalDetail
	return d, c.do(ctx, "POST", "/v1/approvals/"+escape(id)+"/decide", r, &d)
}

// Wait waits on gate.sock until a person decides the approval or it
// expires, and returns the verdict for the call.
func (c *Client) Wait(ctx context.Context, id string) (api.Verdict, error) {
	var v api.Verdict
	return v, c.do(ctx, "POST", "/v1/approvals/"+escape(id)+"/wait", struct{}{}, &v)
}

// SetClaudePID tells the daemon which process is the session's claude.
func (c *Client) SetClaudePID(ctx context.Context, session string, pid int) error {
	return c.do(ctx, "POST", "/v1/sessions/"+escape(session)+"/claude", api.ClaudePIDRequest{PID: pid}, nil)
}

// Watcher reads the events of GET /v1/watch.
type Watcher struct {
	body io.Closer
	dec  *json.Decoder
}

// Watch opens the event stream; its first event is a snapshot. It lasts
// until ctx ends, Close, or the daemon ends it.
func (c *Client) Watch(ctx context.Context) (*Watcher, error) {
	body, err := c.stream(ctx, "/v1/watch")
	if err != nil {
		return nil, err
	}
	return &Watcher{body: body, dec: json.NewDecoder(bufio.NewReader(body))}, nil
}

// NewWatcher reads WatchEvent lines from body: a stream like GET /v1/watch
// from another source of approvals (a fleet's database).
func NewWatcher(body io.ReadCloser) *Watcher {
	return &Watcher{body: body, dec: json.NewDecoder(bufio.NewReader(body))}
}

// Next returns the next event.
func (w *Watcher) Next() (api.WatchEvent, error) {
	var ev api.WatchEvent
	if err := w.dec.Decode(&ev); err != nil {
		return ev, fmt.Errorf("watch: %w", err)
	}
	return ev, nil
}

// Close ends the stream.
func (w *Watcher) Close() error { return w.body.Close() }

// VerifyAudit walks the whole audit chain; a broken one is reported in
// the result (Valid false, Broken), not as an error.
func (c *Client) VerifyAudit(ctx context.Context) (api.VerifyResult, error) {
	var r api.VerifyResult
	return r, c.do(ctx, "GET", "/v1/audit/verify", nil, &r)
}

// PruneAudit removes what is older than before from the ledger (audit
// prune).
func (c *Client) PruneAudit(ctx context.Context, before time.Time) (api.Pruned, error) {
	var r api.Pruned
	return r, c.do(ctx, "POST", "/v1/audit/prune", api.PruneRequest{Before: before}, &r)
}

// ExportAudit writes the audit chain to w as JSON lines, one event a line,
// exactly as hashed.
func (c *Client) ExportAudit(ctx context.Context, w io.Writer) error {
	body, err := c.stream(ctx, "/v1/audit/export")
	if err != nil {
		return err
	}
	defer body.Close()
	if _, err := io.Copy(w, body); err != nil {
		return &UnavailableError{SocketPath: c.socket(), Err: err}
	}
	return nil
}

// AuditEvent returns one event of the audit chain, as stored.
func (c *Client) AuditEvent(ctx context.Context, seq uint64) (json.RawMessage, error) {
	var e json.RawMessage
	return e, c.do(ctx, "GET", "/v1/audit/events/"+strconv.FormatUint(seq, 10), nil, &e)
}
