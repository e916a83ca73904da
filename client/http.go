package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/api"
)

// The client speaks HTTP/1.1 over the daemon's Unix socket itself, one
// connection per request (or kept for the next, with Client.KeepAlive):
// net/http would bring crypto/tls and the rest of its package
// initialisation into the hook binary, which Claude Code spawns for every
// tool call (about 0.3 ms of its start-up, measured). The daemon's side is
// net/http; this side needs only what it sends: requests with a
// Content-Length, and responses with a Content-Length, chunked, or ending
// with the connection. It does without the net package too (socket.go).

// escape percent-encodes s as a path segment or a query value: every byte
// but RFC 3986's unreserved ones. (url.PathEscape would do for a path, but
// net/url brings net/netip, and its initialisation, into the hook binary:
// about 30 µs of every tool call's, in alternating runs.)
func escape(s string) string {
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
			b = append(b, c)
		default:
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return string(b)
}

// response is an HTTP response whose body is read from the connection.
type response struct {
	status int
	body   io.ReadCloser // closing it closes the connection, or keeps it (KeepAlive)
}

// conn is a connection to the daemon with its reader and the peer it was
// verified as.
type conn struct {
	*socket
	r    *bufio.Reader
	peer Peer
	sock string // the socket it was dialled on
}

// roundTrip sends one request and reads the response's head. ctx bounds
// the whole exchange, reading the body included: when it ends the
// connection is closed. With KeepAlive, a connection kept from an earlier
// request is used when there is one; if it turns out closed before any
// answer (the daemon restarted), the request goes once more on a new one.
func (c *Client) roundTrip(ctx context.Context, method, path string, body []byte) (*response, error) {
	cc, kept, err := c.conn(ctx)
	if err != nil {
		return nil, err
	}
	resp, answered, err := c.exchange(ctx, cc, method, path, body)
	if err != nil && kept && !answered && ctx.Err() == nil {
		if cc, err = c.dial(ctx); err != nil {
			return nil, err
		}
		resp, _, err = c.exchange(ctx, cc, method, path, body)
	}
	return resp, err
}

// conn is a kept connection, verified again, or a new one.
func (c *Client) conn(ctx context.Context) (*conn, bool, error) {
	if cc := c.kept(); cc != nil {
		return cc, true, nil
	}
	cc, err := c.dial(ctx)
	return cc, false, err
}

// kept is the newest idle connection, or nil: none is kept, or the daemon
// behind them is no longer trusted.
func (c *Client) kept() *conn {
	if !c.KeepAlive {
		return nil
	}
	c.mu.Lock()
	n := len(c.idle)
	if n == 0 {
		c.mu.Unlock()
		return nil
	}
	cc := c.idle[n-1]
	c.idle = c.idle[:n-1]
	c.mu.Unlock()
	if c.VerifyPeer != nil && c.VerifyPeer(cc.peer) != nil {
		// Kept from a daemon no longer trusted (restarted, say): a new
		// connection is verified afresh.
		cc.Close()
		c.closeIdle()
		return nil
	}
	return cc
}

// dial connects to the socket and verifies the peer.
func (c *Client) dial(ctx context.Context) (*conn, error) {
	sock := c.socket()
	s, err := dialUnix(sock)
	if err != nil {
		return nil, &UnavailableError{SocketPath: sock, Err: err}
	}
	cc := &conn{socket: s, r: bufio.NewReader(s), sock: sock}
	if c.VerifyPeer != nil {
		cc.peer, err = s.peer()
		if err == nil {
			err = c.VerifyPeer(cc.peer)
		}
		if err != nil {
			s.Close()
			return nil, &UnavailableError{SocketPath: sock, Err: err}
		}
	}
	return cc, nil
}

// exchange sends the request on cc and reads the response's head;
// answered says that the server began to answer.
func (c *Client) exchange(ctx context.Context, cc *conn, method, path string, body []byte) (*response, bool, error) {
	stop := context.AfterFunc(ctx, func() { cc.Close() })
	answered, sent := false, false
	fail := func(err error) (*response, bool, error) {
		stop()
		cc.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, answered, &UnavailableError{SocketPath: cc.sock, Err: err, Sent: sent}
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: toolgate\r\n%s: %d\r\n", method, path, api.HeaderProtocol, api.ProtocolVersion)
	if !c.KeepAlive {
		req.WriteString("Connection: close\r\n")
	}
	if body != nil {
		fmt.Fprintf(&req, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	req.WriteString("\r\n")
	req.Write(body)
	if n, err := cc.Write(req.Bytes()); err != nil {
		sent = n > 0
		return fail(err)
	}
	sent = true
	left := maxHead
	line, err := readLine(cc.r, &left)
	if err != nil {
		return fail(err)
	}
	answered = true
	status, err := parseStatus(line)
	if err != nil {
		return fail(err)
	}
	head, err := readHeader(cc.r)
	if err != nil {
		return fail(err)
	}
	b := &connBody{Reader: cc.r, ctx: ctx, c: c, conn: cc, stop: stop}
	switch {
	case strings.EqualFold(head["transfer-encoding"], "chunked"):
		ch := &chunked{r: cc.r}
		b.Reader, b.done = ch, func() bool { return ch.done && ch.left == 0 }
	case head["content-length"] != "":
		n, err := strconv.ParseInt(head["content-length"], 10, 64)
		if err != nil || n < 0 {
			return fail(fmt.Errorf("bad Content-Length %q", head["content-length"]))
		}
		lr := &lengthBody{io.LimitedReader{R: cc.r, N: n}}
		b.Reader, b.done = lr, func() bool { return lr.N == 0 }
	}
	if strings.EqualFold(head["connection"], "close") {
		b.done = nil // the server closes it
	}
	return &response{status: status, body: b}, true, nil
}

// closeIdle closes every kept connection.
func (c *Client) closeIdle() {
	c.mu.Lock()
	idle := c.idle
	c.idle = nil
	c.mu.Unlock()
	for _, cc := range idle {
		cc.Close()
	}
}

// CloseIdle closes the connections a KeepAlive client keeps.
func (c *Client) CloseIdle() { c.closeIdle() }

// Peer returns the credentials of the process listening on the socket.
func (c *Client) Peer(ctx context.Context) (Peer, error) {
	sock := c.socket()
	s, err := dialUnix(sock)
	if err != nil {
		return Peer{}, &UnavailableError{SocketPath: sock, Err: err}
	}
	defer s.Close()
	return s.peer()
}

// maxHead bounds a response's status line, its header, and a chunk's size
// line with the trailers after the last: a peer that sends one without
// end is refused once it has sent this much, rather than held in memory
// until the request's context ends (the hook's is 10 s, in which a peer
// can send gigabytes). The daemon's are a few hundred bytes; net/http's
// client allows 1 MB.
const maxHead = 1 << 20

var errHeadTooLong = errors.New("the response's head is too long")

// readLine reads a line of the response's head, without its CRLF (or LF),
// and takes its length from *left: one longer than *left is refused.
func readLine(r *bufio.Reader, left *int) (string, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		if *left -= len(frag); *left < 0 {
			return "", errHeadTooLong
		}
		line = append(line, frag...)
		if err == nil {
			return strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r"), nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
	}
}

// readHeader reads the response's header fields, up to the empty line
// that ends them, by lower-case name (a name given twice keeps its first
// value; the daemon sends each once).
func readHeader(r *bufio.Reader) (map[string]string, error) {
	head := map[string]string{}
	left := maxHead
	for {
		line, err := readLine(r, &left)
		if err != nil {
			return nil, err
		}
		if line == "" {
			return head, nil
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("malformed header line %q", line)
		}
		name = strings.ToLower(name)
		if _, seen := head[name]; !seen {
			head[name] = strings.TrimSpace(value)
		}
	}
}

// parseStatus reads the code of an HTTP/1.x status line.
func parseStatus(line string) (int, error) {
	proto, rest, _ := strings.Cut(line, " ")
	code, _, _ := strings.Cut(rest, " ")
	n, err := strconv.Atoi(code)
	if !strings.HasPrefix(proto, "HTTP/1.") || err != nil || n < 100 || n > 999 {
		return 0, fmt.Errorf("not an HTTP/1 response: %q", line)
	}
	return n, nil
}

// connBody is a response body. Closing it closes its connection, unless
// the client keeps connections and the body was read to its end: then the
// connection waits for the next request.
type connBody struct {
	io.Reader
	ctx  context.Context // the request's: when it ends, the connection is shut down
	c    *Client
	conn *conn
	stop func() bool
	done func() bool // whether the body was read to its end; nil: the connection cannot be kept
}

// Read reads the body. A read that failed or ended once the request's
// context ended is that context's error: shutting the connection down
// (socket.Close) ends a read as the server's end of the body would, and
// what was read is then not the whole body.
func (b *connBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	if err != nil && b.ctx.Err() != nil && (b.done == nil || !b.done()) {
		err = b.ctx.Err()
	}
	return n, err
}

// lengthBody is a body of a Content-Length: one that ends before it is a
// broken one.
type lengthBody struct{ io.LimitedReader }

func (l *lengthBody) Read(p []byte) (int, error) {
	n, err := l.LimitedReader.Read(p)
	if errors.Is(err, io.EOF) && l.N > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *connBody) Close() error {
	if !b.stop() { // the request's context closed the connection
		return nil
	}
	if !b.c.KeepAlive || b.done == nil || !b.done() {
		return b.conn.Close()
	}
	b.c.mu.Lock()
	defer b.c.mu.Unlock()
	if len(b.c.idle) >= maxIdle {
		return b.conn.Close()
	}
	b.c.idle = append(b.c.idle, b.conn)
	return nil
}

// maxIdle bounds the connections a KeepAlive client keeps.
const maxIdle = 4

// chunked reads a body in HTTP/1.1 chunked transfer encoding.
type chunked struct {
	r    *bufio.Reader
	left int64 // of the current chunk
	done bool
}

func (c *chunked) Read(p []byte) (int, error) {
	for c.left == 0 {
		if c.done {
			return 0, io.EOF
		}
		if err := c.next(); err != nil {
			return 0, err
		}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left == 0 && err == nil {
		err = c.crlf()
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// next reads the size line of the next chunk; the last one (size 0) ends
// the body, after its trailers.
func (c *chunked) next() error {
	left := maxHead
	line, err := readLine(c.r, &left)
	if err != nil {
		return err
	}
	size, _, _ := strings.Cut(strings.TrimSpace(line), ";")
	n, err := strconv.ParseInt(size, 16, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("bad chunk size %q", line)
	}
	if n == 0 {
		for { // trailers, up to the empty line
			line, err := readLine(c.r, &left)
			if err != nil {
				return err
			}
			if strings.TrimSpace(line) == "" {
				c.done = true
				return nil
			}
		}
	}
	c.left = n
	return nil
}

func (c *chunked) crlf() error {
	var b [2]byte
	if _, err := io.ReadFull(c.r, b[:]); err != nil || b != [2]byte{'\r', '\n'} {
		return fmt.Errorf("a chunk does not end with CRLF")
	}
	return nil
}
