package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/api"
)

// Client talks to the daemon over its Unix socket. Its zero value is not
// usable: set SocketPath. It is safe for concurrent use.
type Client struct {
	SocketPath string
	// Timeout bounds each request; none when 0.
	Timeout time.Duration
	// VerifyPeer, when set, is shown the kernel's credentials of the
	// process listening on the socket before each request is sent; an
	// error refuses the request (an *UnavailableError): the hook and
	// toolgate run talk only to the daemon they trust. A kept connection
	// (KeepAlive) is shown again, with the peer it was verified as.
	VerifyPeer func(Peer) error
	// KeepAlive keeps connections open for the next request (toolgate
	// run, which forwards every hook event of its session): a new
	// connection a request costs a dial and a peer check. The hook binary,
	// which makes one request, closes its connection.
	KeepAlive bool

	// Locate, when set, names the socket for each new connection instead
	// of SocketPath: an approver that waits for a daemon finds it wherever
	// it starts (see paths.Paths.Live).
	Locate func() string

	mu   sync.Mutex
	idle []*conn // kept connections (KeepAlive)
}

// socket is the socket the next connection dials.
func (c *Client) socket() string {
	if c.Locate != nil {
		return c.Locate()
	}
	return c.SocketPath
}

// Peer is a process at the other end of a Unix socket, from the kernel
// (SO_PEERCRED).
type Peer struct {
	PID, UID int
}

// NewClient returns a client of the daemon listening on socketPath.
func NewClient(socketPath string) *Client { return &Client{SocketPath: socketPath} }

// UnavailableError is a daemon that could not be reached.
type UnavailableError struct {
	SocketPath string
	Err        error
	// Sent: the request was written before the connection failed, so
	// the daemon may have acted on it. Sending it again could do so twice.
	Sent bool
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("the toolgate daemon is not reachable at %s: %v", e.SocketPath, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// IsUnavailable reports whether err means the daemon could not be reached.
func IsUnavailable(err error) bool { var e *UnavailableError; return errors.As(err, &e) }

// NeverSent reports whether err means the daemon could not be reached
// before the request was written: sending it again cannot repeat it.
func NeverSent(err error) bool { var e *UnavailableError; return errors.As(err, &e) && !e.Sent }

// StatusError is an error the daemon answered.
type StatusError struct {
	Status int
	Err    api.Error
}

func (e *StatusError) Error() string { return e.Err.Message }

// do sends a request with an optional JSON body and decodes the answer.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	data, err := c.send(ctx, method, path, body)
	if err != nil || out == nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// send sends a request with a body (none when nil) and returns the body of
// the answer, which is an error unless it is 200.
func (c *Client) send(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	resp, err := c.roundTrip(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	defer resp.body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.body, 64<<20))
	if err != nil {
		return nil, &UnavailableError{SocketPath: c.socket(), Err: err}
	}
	if resp.status != 200 {
		return nil, statusError(resp.status, data)
	}
	return data, nil
}

// statusError is the daemon's error envelope of a failed request.
func statusError(status int, data []byte) *StatusError {
	se := &StatusError{Status: status}
	if json.Unmarshal(data, &se.Err) != nil || se.Err.Message == "" {
		se.Err = api.Error{Message: strings.TrimSpace(string(data)), Code: "http_" + strconv.Itoa(status)}
	}
	return se
}

// Status asks the daemon how it is.
func (c *Client) Status(ctx context.Context) (api.StatusResponse, error) {
	var r api.StatusResponse
	return r, c.do(ctx, "GET", "/v1/status", nil, &r)
}

// Register registers a session.
func (c *Client) Register(ctx context.Context, r api.RegisterRequest) (api.Session, error) {
	var s api.Session
	return s, c.do(ctx, "POST", "/v1/sessions", r, &s)
}

// Session returns a session.
func (c *Client) Session(ctx context.Context, id string) (api.Session, error) {
	var s api.Session
	return s, c.do(ctx, "GET", "/v1/sessions/"+escape(id), nil, &s)
}

// EndSession marks a session ended.
func (c *Client) EndSession(ctx context.Context, id string) (api.EndedSession, error) {
	return c.EndSessionFor(ctx, id, api.EndEnded)
}

// EndSessionFor marks a session ended for reason: EndEnded, or
// EndInterrupted when its supervisor was stopped.
func (c *Client) EndSessionFor(ctx context.Context, id, reason string) (api.EndedSession, error) {
	var s api.EndedSession
	return s, c.do(ctx, "POST", "/v1/sessions/"+escape(id)+"/end", api.EndSessionRequest{Reason: reason}, &s)
}

// Resume takes up a deferred session again, once: the caller becomes its
// owner.
func (c *Client) Resume(ctx context.Context, id string, r api.ResumeRequest) (api.Session, error) {
	var s api.Session
	return s, c.do(ctx, "POST", "/v1/sessions/"+escape(id)+"/resume", r, &s)
}

// Deferred lists the sessions that deferred a call for a person.
func (c *Client) Deferred(ctx context.Context) ([]api.DeferredSession, error) {
	var r api.DeferredResponse
	return r.Sessions, c.do(ctx, "GET", "/v1/deferred", nil, &r)
}

// SessionCalls lists the calls of one session.
func (c *Client) SessionCalls(ctx context.Context, id string) ([]api.Call, error) {
	var r api.CallsResponse
	return r.Calls, c.do(ctx, "GET", "/v1/sessions/"+escape(id)+"/calls", nil, &r)
}

// Calls lists calls, of one session when sessionID is set.
func (c *Client) Calls(ctx context.Context, sessionID string) ([]api.Call, error) {
	var r api.CallsResponse
	path := "/v1/calls"
	if sessionID != "" {
		path += "?session=" + escape(sessionID)
	}
	return r.Calls, c.do(ctx, "GET", path, nil, &r)
}

// Outcomes reports what became of calls of a session (its owner only).
func (c *Client) Outcomes(ctx context.Context, sessionID string, o []api.Outcome) (api.OutcomesResponse, error) {
	var r api.OutcomesResponse
	return r, c.do(ctx, "POST", "/v1/sessions/"+escape(sessionID)+"/outcomes", api.OutcomesRequest{Outcomes: o}, &r)
}

// Hook forwards one hook event.
func (c *Client) Hook(ctx context.Context, r api.HookRequest) (api.HookResponse, error) {
	var out api.HookResponse
	return out, c.do(ctx, "POST", "/v1/hook", r, &out)
}

// HookJSON forwards one hook event given as a HookRequest's JSON, and
// returns the answer as a HookResponse's JSON. The hook binary codes both
// itself (package hook): encoding/json's reflection, set up afresh in
// every process, was about a twentieth of its time from spawn to answer.
func (c *Client) HookJSON(ctx context.Context, body []byte) ([]byte, error) {
	return c.send(ctx, "POST", "/v1/hook", body)
}

// Prompt asks the gate to decide one permission_prompt call.
func (c *Client) Prompt(ctx context.Context, r api.PromptRequest) (api.Verdict, error) {
	var v api.Verdict
	return v, c.do(ctx, "POST", "/v1/prompt", r, &v)
}

// stream GETs path and returns the body of a 200 answer, to be read as it
// comes (a watch, an export, a history) and closed; any other answer is
// its error.
func (c *Client) stream(ctx context.Context, path string) (io.ReadCloser, error) {
	resp, err := c.roundTrip(ctx, "GET", path, nil)
	if err != nil {
		return nil, err
	}
	if resp.status != 200 {
		defer resp.body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.body, 1<<20))
		return nil, statusError(resp.status, data)
	}
	return resp.body, nil
}
