package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
)

// socketPath is a path for a Unix socket, in a directory of its own
// removed when the test ends: short, as socket paths must be.
func socketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tga")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "s.sock")
}

// serve runs a net/http server (the daemon's side of the protocol) on a
// Unix socket for the test, with the handler.
func serve(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	sock := socketPath(t)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return NewClient(sock)
}

// The client speaks HTTP/1.1 itself; net/http's server is the other side.
func TestClientOverNetHTTP(t *testing.T) {
	big := strings.Repeat("x", 3<<20)
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(api.HeaderProtocol) == "" || r.Host != "toolgate" {
			http.Error(w, "no protocol header", 400)
			return
		}
		switch r.URL.Path {
		case "/v1/status": // small: Content-Length
			json.NewEncoder(w).Encode(api.StatusResponse{Protocol: api.ProtocolVersion, PID: 7})
		case "/v1/sessions": // echoes the body back, large: chunked
			var req api.RegisterRequest
			json.NewDecoder(r.Body).Decode(&req)
			json.NewEncoder(w).Encode(api.Session{ID: req.PolicyName + "-" + big})
		case "/v1/hook": // an error envelope
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(api.Error{Message: "the gate could not", Code: "internal"})
		case "/v1/calls": // not JSON at all
			http.Error(w, "plain failure", 500)
		}
	})
	ctx := context.Background()
	if st, err := c.Status(ctx); err != nil || st.PID != 7 {
		t.Errorf("status: %+v %v", st, err)
	}
	if s, err := c.Register(ctx, api.RegisterRequest{PolicyName: "p"}); err != nil || s.ID != "p-"+big {
		t.Errorf("a chunked 3 MB answer: %d bytes, %v", len(s.ID), err)
	}
	_, err := c.Hook(ctx, api.HookRequest{Event: json.RawMessage(`{}`)})
	var se *StatusError
	if !errors.As(err, &se) || se.Status != 503 || se.Err.Code != "internal" || errorCode(err) != "internal" {
		t.Errorf("an error envelope: %v", err)
	}
	if _, err := c.Calls(ctx, ""); errorCode(err) != "http_500" || !strings.Contains(err.Error(), "plain failure") {
		t.Errorf("a plain error: %v", err)
	}
	if _, err := NewClient("/nonexistent/s.sock").Status(ctx); !IsUnavailable(err) {
		t.Errorf("no daemon: %v", err)
	}
}

// What a client puts in a request's path and query reaches net/http's
// handlers as it was: ids of any bytes, and history's times.
func TestEscapedAsTheServerReadsThem(t *testing.T) {
	got := make(chan string, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		got <- r.PathValue("id")
		json.NewEncoder(w).Encode(api.Session{})
	})
	mux.HandleFunc("GET /v1/calls", func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Query().Get("session")
		json.NewEncoder(w).Encode(api.CallsResponse{})
	})
	mux.HandleFunc("GET /v1/history", func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Query().Get("since") + " " + r.URL.Query().Get("until")
	})
	c := serve(t, mux.ServeHTTP)
	ctx := context.Background()
	for _, id := range []string{"ses_01JB9Z", "a/b", "a b", "50%", "q?x=1&y#z", "ü+é", "a..b", "\x00\r\n", "~-._"} {
		if _, err := c.Session(ctx, id); err != nil {
			t.Fatalf("session %q: %v", id, err)
		}
		if seen := <-got; seen != id {
			t.Errorf("the path named %q, the server read %q", id, seen)
		}
		if _, err := c.Calls(ctx, id); err != nil {
			t.Fatalf("calls %q: %v", id, err)
		}
		if seen := <-got; seen != id {
			t.Errorf("the query named %q, the server read %q", id, seen)
		}
	}
	since, until := time.Date(2026, 12, 1, 23, 0, 0, 5, time.FixedZone("x", 3600)), time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	if err := c.History(ctx, since, until, func(api.HistoryItem) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if seen, want := <-got, since.UTC().Format(time.RFC3339Nano)+" "+until.Format(time.RFC3339Nano); seen != want {
		t.Errorf("history's window reached the server as %q, want %q", seen, want)
	}
}

// A stream (GET /v1/watch) is read event by event as the server flushes
// them, and a request's context ends a wait the server holds.
func TestClientStreamsAndCancels(t *testing.T) {
	release := make(chan struct{})
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/watch":
			enc := json.NewEncoder(w)
			for _, typ := range []string{api.EventSnapshot, api.EventRequested} {
				enc.Encode(api.WatchEvent{Type: typ})
				w.(http.Flusher).Flush()
				<-release
			}
		default: // a wait nobody answers
			<-r.Context().Done()
		}
	})
	ctx := context.Background()
	stream, err := c.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{api.EventSnapshot, api.EventRequested} {
		ev, err := stream.Next() // each arrives before the server goes on: the reader does not wait for the end
		if err != nil || ev.Type != want {
			t.Fatalf("event %+v %v, want %s", ev, err, want)
		}
		release <- struct{}{}
	}
	if _, err := stream.Next(); err == nil {
		t.Error("the stream went on after the server ended it")
	}
	stream.Close()
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := c.Wait(wctx, "apr_1"); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("a wait past its context: %v after %s", err, time.Since(start))
	}
}

func TestChunkedBodies(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"5\r\nhello\r\n0\r\n\r\n", "hello"},
		{"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n", "abcde"},
		{"a\r\n0123456789\r\n0\r\n\r\n", "0123456789"},
	} {
		resp := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + tt.in
		c := serve(t, nil)
		ln, _ := net.Listen("unix", c.SocketPath+".raw")
		go func() {
			conn, err := ln.Accept()
			if err == nil {
				buf := make([]byte, 4096)
				conn.Read(buf)
				conn.Write([]byte(resp))
				conn.Close()
			}
		}()
		raw := NewClient(c.SocketPath + ".raw")
		r, err := raw.roundTrip(context.Background(), "GET", "/", nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r.body)
		if err != nil || string(got) != tt.want {
			t.Errorf("%q: got %q, %v", tt.in, got, err)
		}
		ln.Close()
	}
	for _, bad := range []string{"HTTP/2 200\r\n", "200 OK\r\n", "HTTP/1.1 abc\r\n"} {
		if _, err := parseStatus(strings.TrimSpace(bad)); err == nil {
			t.Errorf("status line %q accepted", bad)
		}
	}
}

// errorCode is the daemon's error code of err, or "".
func errorCode(err error) string {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Err.Code
	}
	return ""
}

// A client that verifies its peer refuses one that is not the daemon it
// trusts, before it sends anything.
func TestVerifyPeer(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"pid":1}`)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	self, _ := os.Executable() // this test binary is the server here
	c := NewClient(sock)
	c.VerifyPeer = Trust{Exe: self}.Verify
	if _, err := c.Status(context.Background()); err != nil {
		t.Fatalf("the trusted peer was refused: %v", err)
	}
	c.VerifyPeer = Trust{Exe: "/bin/sh"}.Verify
	_, err = c.Status(context.Background())
	if !IsUnavailable(err) || !strings.Contains(err.Error(), "not the toolgate daemon") {
		t.Errorf("another executable on the socket: %v", err)
	}
	// Outside any Landlock domain, a process of the same user is reached
	// by signal 0: it counts as inside.
	c.VerifyPeer = Trust{Exe: self, Contained: true}.Verify
	if _, err := c.Status(context.Background()); err == nil || !strings.Contains(err.Error(), "inside this session's containment") {
		t.Errorf("a peer in the client's own domain: %v", err)
	}
	if p, err := NewClient(sock).Peer(context.Background()); err != nil || p.PID != os.Getpid() || p.UID != os.Getuid() {
		t.Errorf("peer %+v %v", p, err)
	}
}

// A KeepAlive client sends its requests on one connection, verifies the
// peer it was made with before each, and when the server has closed the
// kept connection (a restart), sends the request again on a new one.
func TestKeepAlive(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 10)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(api.StatusResponse{PID: 7})
	}), ConnState: func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns <- c
		}
	}}
	go srv.Serve(ln)
	defer srv.Close()
	c := NewClient(sock)
	c.KeepAlive = true
	verified := 0
	c.VerifyPeer = func(p Peer) error {
		verified++
		if p.PID != os.Getpid() {
			return errors.New("not the server")
		}
		return nil
	}
	ctx := context.Background()
	for range 3 {
		if st, err := c.Status(ctx); err != nil || st.PID != 7 {
			t.Fatalf("status: %+v %v", st, err)
		}
	}
	first := <-conns
	if len(conns) != 0 || verified != 3 {
		t.Fatalf("%d more connections for 3 requests, %d verifications", len(conns), verified)
	}
	first.Close() // the server goes away from the kept connection
	if st, err := c.Status(ctx); err != nil || st.PID != 7 {
		t.Fatalf("after the server closed the kept connection: %+v %v", st, err)
	}
	if len(conns) != 1 {
		t.Errorf("%d new connections, want 1", len(conns))
	}
	c.VerifyPeer = func(Peer) error { return errors.New("lost") }
	if _, err := c.Status(ctx); !IsUnavailable(err) || !strings.Contains(err.Error(), "lost") {
		t.Errorf("a kept connection to a peer no longer trusted: %v", err)
	}
}

// The response's head is read without net/textproto: names in any case,
// values trimmed, the first of a repeated name kept, and a malformed or
// cut-short head refused.
func TestReadHeader(t *testing.T) {
	head, err := readHeader(bufio.NewReader(strings.NewReader(
		"Content-Length:  12 \r\nconnection: close\nX-A: 1\r\nx-a: 2\r\n\r\nbody")))
	if err != nil || head["content-length"] != "12" || head["connection"] != "close" || head["x-a"] != "1" {
		t.Errorf("head %q, %v", head, err)
	}
	for _, bad := range []string{"Content-Length 12\r\n\r\n", ": x\r\n\r\n", "Bad Name: x\r\n\r\n", "Content-Length: 12\r\n"} {
		if head, err := readHeader(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("%q read as %q", bad, head)
		}
	}
}

// Closing a socket twice (a request's context and its failure both close
// it) leaves alone the connection its descriptor's number went to since;
// and Close returns a read blocked on it.
func TestSocketClose(t *testing.T) {
	sock := rawPeer(t, func(c net.Conn) { io.Copy(c, c) }) // an echo
	a, err := dialUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() { _, err := a.Read(make([]byte, 1)); read <- err }()
	a.Close()
	if err := <-read; err == nil {
		t.Error("a read blocked on a closed socket returned no error")
	}
	b, err := dialUnix(sock) // most likely a's descriptor number
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a.Close()
	buf := make([]byte, 4)
	if _, err := b.Write([]byte("ping")); err != nil {
		t.Fatalf("the next connection after closing the first twice: %v", err)
	}
	if _, err := io.ReadFull(b, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("the next connection after closing the first twice: %q %v", buf, err)
	}
}
