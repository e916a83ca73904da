package api

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"syscall"
)

// The client speaks HTTP/1.1 over the daemon's Unix socket itself, one
// connection per request: net/http would bring crypto/tls and the rest of
// its package initialisation into the hook binary, which Claude Code
// spawns for every tool call (about 0.3 ms of its start-up, measured).
// The daemon's side is net/http; this side needs only what it sends:
// requests with a Content-Length, and responses with a Content-Length,
// chunked, or ending with the connection.

// response is an HTTP response whose body is read from the connection.
type response struct {
	status int
	body   io.ReadCloser // closing it closes the connection
}

// roundTrip sends one request and reads the response's head. ctx bounds
// the whole exchange, reading the body included: when it ends the
// connection is closed.
func (c *Client) roundTrip(ctx context.Context, method, path string, body []byte) (*response, error) {
	sock := c.socket()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, &UnavailableError{SocketPath: sock, Err: err}
	}
	if c.VerifyPeer != nil {
		p, err := peerOf(conn)
		if err == nil {
			err = c.VerifyPeer(p)
		}
		if err != nil {
			conn.Close()
			return nil, &UnavailableError{SocketPath: sock, Err: err}
		}
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	fail := func(err error) (*response, error) {
		stop()
		conn.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, &UnavailableError{SocketPath: sock, Err: err}
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: toolgate\r\n%s: %d\r\nConnection: close\r\n", method, path, HeaderProtocol, ProtocolVersion)
	if body != nil {
		fmt.Fprintf(&req, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	req.WriteString("\r\n")
	req.Write(body)
	if _, err := conn.Write(req.Bytes()); err != nil {
		return fail(err)
	}
	r := bufio.NewReader(conn)
	tp := textproto.NewReader(r)
	line, err := tp.ReadLine()
	if err != nil {
		return fail(err)
	}
	status, err := parseStatus(line)
	if err != nil {
		return fail(err)
	}
	head, err := tp.ReadMIMEHeader()
	if err != nil {
		return fail(err)
	}
	var rd io.Reader = r
	switch {
	case strings.EqualFold(head.Get("Transfer-Encoding"), "chunked"):
		rd = &chunked{r: r}
	case head.Get("Content-Length") != "":
		n, err := strconv.ParseInt(head.Get("Content-Length"), 10, 64)
		if err != nil || n < 0 {
			return fail(fmt.Errorf("bad Content-Length %q", head.Get("Content-Length")))
		}
		rd = io.LimitReader(r, n)
	}
	return &response{status: status, body: &connBody{Reader: rd, conn: conn, stop: stop}}, nil
}

// peerOf reads the credentials of the process at the other end of conn.
func peerOf(conn net.Conn) (Peer, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return Peer{}, errors.New("not a Unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *syscall.Ucred
	cerr := raw.Control(func(fd uintptr) {
		cred, err = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	})
	if cerr != nil {
		return Peer{}, cerr
	}
	if err != nil {
		return Peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	return Peer{PID: int(cred.Pid), UID: int(cred.Uid)}, nil
}

// Peer returns the credentials of the process listening on the socket.
func (c *Client) Peer(ctx context.Context) (Peer, error) {
	sock := c.socket()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return Peer{}, &UnavailableError{SocketPath: sock, Err: err}
	}
	defer conn.Close()
	return peerOf(conn)
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

// connBody is a response body; closing it closes its connection.
type connBody struct {
	io.Reader
	conn net.Conn
	stop func() bool
}

func (b *connBody) Close() error {
	b.stop()
	return b.conn.Close()
}

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
	line, err := c.r.ReadString('\n')
	if err != nil {
		return io.ErrUnexpectedEOF
	}
	size, _, _ := strings.Cut(strings.TrimSpace(line), ";")
	n, err := strconv.ParseInt(size, 16, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("bad chunk size %q", line)
	}
	if n == 0 {
		c.done = true
		for { // trailers, up to the empty line
			line, err := c.r.ReadString('\n')
			if err != nil || strings.TrimSpace(line) == "" {
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
