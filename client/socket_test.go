package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
)

// rawPeer listens on a new socket and runs serve on every connection.
func rawPeer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	sock := socketPath(t)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { defer c.Close(); serve(c) })
		}
	})
	return sock
}

// readRequest reads a request's head and its body.
func readRequest(c net.Conn) {
	r := bufio.NewReader(c)
	req, err := http.ReadRequest(r)
	if err == nil {
		io.Copy(io.Discard, req.Body)
	}
}

// No peer keeps a request past its context, whatever it does or fails to
// do, and one that sends a head without end is refused once it has sent
// maxHead, rather than held in memory until the context ends. A peer that
// stalls meets a short deadline; one that sends without end a deadline
// long enough (headTimeout) that only a machine unable to move maxHead
// bytes in that time reaches it first: which of the two bounded errors
// comes first depends on neither how loaded the machine is.
func TestPeersThatNeverAnswer(t *testing.T) {
	big := make([]byte, 8<<20) // more than the socket's buffers: the write blocks
	for _, tt := range []struct {
		name  string
		body  []byte
		want  error
		serve func(c net.Conn, hold <-chan struct{}) // hold is closed when the test ends
	}{
		{"accepts and never answers", nil, context.DeadlineExceeded, func(c net.Conn, hold <-chan struct{}) { readRequest(c); <-hold }},
		{"never reads a large request", big, context.DeadlineExceeded, func(c net.Conn, hold <-chan struct{}) { <-hold }},
		{"an endless status line", nil, errHeadTooLong, func(c net.Conn, _ <-chan struct{}) {
			readRequest(c)
			endless(c, "HTTP/1.1 200 OK", "x")
		}},
		{"an endless header line", nil, errHeadTooLong, func(c net.Conn, _ <-chan struct{}) {
			readRequest(c)
			endless(c, "HTTP/1.1 200 OK\r\nX-A: ", "a")
		}},
		{"endless headers", nil, errHeadTooLong, func(c net.Conn, _ <-chan struct{}) {
			readRequest(c)
			endless(c, "HTTP/1.1 200 OK\r\n", "X-A: b\r\n")
		}},
		{"an endless chunk size line", nil, errHeadTooLong, func(c net.Conn, _ <-chan struct{}) {
			readRequest(c)
			endless(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "f")
		}},
		{"a byte at a time", nil, context.DeadlineExceeded, func(c net.Conn, _ <-chan struct{}) {
			readRequest(c)
			for _, b := range []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}") {
				if _, err := c.Write([]byte{b}); err != nil {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hold := make(chan struct{})
			c := NewClient(rawPeer(t, func(c net.Conn) { tt.serve(c, hold) }))
			t.Cleanup(func() { close(hold) }) // before rawPeer's, which waits for the peer
			c.Timeout = 300 * time.Millisecond
			if tt.want == errHeadTooLong {
				c.Timeout = headTimeout
			}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := c.send(context.Background(), "POST", "/v1/hook", tt.body)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			grew := int64(after.TotalAlloc-before.TotalAlloc) >> 20
			t.Logf("%v after %v; %d MB allocated", err, took.Round(time.Millisecond), grew)
			if err == nil || took > c.Timeout+5*time.Second { // a bound on a hang
				t.Errorf("returned %v after %v (its deadline: %v)", err, took, c.Timeout)
			}
			if !IsUnavailable(err) || !errors.Is(err, tt.want) {
				t.Errorf("not unavailable (%v): %v", tt.want, err)
			}
			if grew > 32 {
				t.Errorf("%d MB allocated for a peer that sends without end", grew)
			}
		})
	}
}

// A body is whole or the read of it fails: one that the request's
// context cut short (the connection shut down ends the read as the
// server's end of a body would), one the server stopped sending before
// its Content-Length, or before the end of its trailers, never reads as
// a whole body.
func TestBodyCutShort(t *testing.T) {
	stall := func(head string) func(net.Conn) {
		return func(c net.Conn) {
			readRequest(c)
			io.WriteString(c, head)
			io.Copy(io.Discard, c) // until the client shuts the connection down
		}
	}
	cut := func(head string) func(net.Conn) {
		return func(c net.Conn) { readRequest(c); io.WriteString(c, head) }
	}
	for _, tt := range []struct {
		name  string
		serve func(net.Conn)
		want  error
	}{
		{"context ends within a Content-Length", stall("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"a\""), context.DeadlineExceeded},
		{"context ends within a body that ends with the connection", stall("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{\"a\""), context.DeadlineExceeded},
		{"context ends within the trailers", stall("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: x\r\n"), context.DeadlineExceeded},
		{"the server stops within a Content-Length", cut("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"a\""), io.ErrUnexpectedEOF},
		{"the server stops within the trailers", cut("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: x\r\n"), io.ErrUnexpectedEOF},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := NewClient(rawPeer(t, tt.serve))
			c.Timeout = 300 * time.Millisecond
			data, err := c.send(context.Background(), "GET", "/v1/status", nil)
			if !IsUnavailable(err) || !errors.Is(err, tt.want) {
				t.Errorf("read %q, %v; want an *UnavailableError of %v", data, err, tt.want)
			}
		})
	}
}

// headTimeout is the client's deadline against a peer that sends a head
// without end: a bound on a hang, which the client's maxHead check comes
// well before.
const headTimeout = 30 * time.Second

// endless writes head and then unit until the connection fails, or for
// headTimeout at most.
func endless(c net.Conn, head, unit string) {
	if _, err := io.WriteString(c, head); err != nil {
		return
	}
	chunk := []byte(strings.Repeat(unit, (64<<10)/len(unit)))
	deadline := time.Now().Add(headTimeout)
	for time.Now().Before(deadline) {
		if _, err := c.Write(chunk); err != nil {
			return
		}
	}
}

// A listener whose backlog is full (it never accepts) is not waited for:
// the connection fails at once, as net.Dial's does.
func TestFullBacklogFailsAtOnce(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: sock}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	c := NewClient(sock)
	c.Timeout = 300 * time.Millisecond
	var kept []*socket
	defer func() {
		for _, s := range kept {
			s.Close()
		}
	}()
	for i := range 10 {
		start := time.Now()
		s, err := dialUnix(sock)
		took := time.Since(start)
		if took > time.Second {
			t.Fatalf("connect %d waited %v", i, took)
		}
		if err != nil {
			t.Logf("connect %d: %v after %v", i, err, took)
			start = time.Now()
			_, err := c.Status(context.Background())
			if !IsUnavailable(err) || time.Since(start) > time.Second {
				t.Errorf("a request to a full backlog: %v after %v", err, time.Since(start))
			}
			return
		}
		kept = append(kept, s)
	}
	t.Error("the backlog never filled")
}

// openFDs counts the process's open descriptors.
func openFDs(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// Requests that succeed, fail or are cut off by their context leave no
// descriptor open behind them.
func TestNoDescriptorLeak(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/status":
			io.WriteString(w, `{"pid":7}`)
		case "/v1/calls": // chunked, large
			io.WriteString(w, `{"calls":[`+strings.Repeat(" ", 100<<10)+`]}`)
		case "/v1/hook": // never answers in time
			select {
			case <-r.Context().Done():
			case <-time.After(time.Second):
			}
		case "/v1/deferred": // answers, then the body stalls
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, "{")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(time.Second):
			}
		}
	})
	self, _ := os.Executable()
	plain := NewClient(srv.SocketPath)
	kept := &Client{SocketPath: srv.SocketPath, KeepAlive: true, VerifyPeer: Trust{Exe: self}.Verify}
	refused := &Client{SocketPath: srv.SocketPath, VerifyPeer: Trust{Exe: "/bin/sh"}.Verify}
	nobody := NewClient(srv.SocketPath + ".none")
	do := func() {
		ctx := context.Background()
		for _, c := range []*Client{plain, kept} {
			if _, err := c.Status(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Calls(ctx, ""); err != nil {
				t.Fatal(err)
			}
			short, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
			if _, err := c.Hook(short, api.HookRequest{}); err == nil {
				t.Fatal("a hook past its context answered")
			}
			if _, err := c.Deferred(short); err == nil {
				t.Fatal("a stalled body read")
			}
			cancel()
		}
		if _, err := refused.Status(ctx); err == nil {
			t.Fatal("an untrusted peer answered")
		}
		if _, err := nobody.Status(ctx); err == nil {
			t.Fatal("no daemon answered")
		}
		plain.Peer(ctx)
	}
	do() // the server's and the test's own descriptors settle
	kept.CloseIdle()
	time.Sleep(100 * time.Millisecond)
	before := openFDs(t)
	for range 100 {
		do()
	}
	kept.CloseIdle()
	noMoreFDs(t, before)
}

// noMoreFDs fails unless the process comes back to at most before open
// descriptors, the servers closing their ends as they notice.
func noMoreFDs(t *testing.T, before int) {
	t.Helper()
	var after int
	for range 50 {
		if after = openFDs(t); after <= before {
			return
		}
		time.Sleep(20 * time.Millisecond) // polling a count nothing signals
	}
	t.Errorf("%d descriptors before, %d after", before, after)
}

// The credentials are those of the process listening on the socket, not
// the client's own: a listener in another process is that process.
func TestPeerOfAnotherProcess(t *testing.T) {
	sock := socketPath(t)
	py := listener(t, sock, "answer")
	p, err := NewClient(sock).Peer(context.Background())
	if err != nil || p.PID != py.Process.Pid || p.UID != os.Getuid() {
		t.Fatalf("peer %+v %v, want pid %d", p, err, py.Process.Pid)
	}
	trusted, err := filepath.EvalSymlinks("/bin/true") // stands for the toolgate binary
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{SocketPath: sock, VerifyPeer: Trust{Exe: trusted}.Verify}
	if _, err := c.Status(context.Background()); err == nil || !strings.Contains(err.Error(), "not the toolgate daemon") {
		t.Errorf("another program on the socket: %v", err)
	}
	c.VerifyPeer = nil
	if st, err := c.Status(context.Background()); err != nil || st.PID != 1 {
		t.Errorf("unverified: %+v %v", st, err)
	}
}

// A peer that goes away before reading the request: the write fails with
// EPIPE, and the process (which ignores no signal) lives on.
func TestPeerGoneBeforeTheRequest(t *testing.T) {
	sock := rawPeer(t, func(c net.Conn) {})
	c := NewClient(sock)
	c.Timeout = time.Second
	for range 20 {
		_, err := c.send(context.Background(), "POST", "/v1/hook", make([]byte, 1<<20))
		if !IsUnavailable(err) {
			t.Fatalf("%v", err)
		}
	}
}

// A KeepAlive client shared by many goroutines, against a server that
// closes idle connections almost at once, some requests cut off by their
// context mid-body: every other request is answered, each by a verified
// peer, and no descriptor is left behind.
func TestKeepAliveUnderLoad(t *testing.T) {
	sock := socketPath(t)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{IdleTimeout: 2 * time.Millisecond, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/deferred" { // a body that stalls
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, "{")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		fmt.Fprintf(w, `{"pid":%d,"version":%q}`, os.Getpid(), strings.Repeat("v", int(time.Now().UnixNano()%5000)))
	})}
	go srv.Serve(ln)
	defer srv.Close()
	self, _ := os.Executable()
	trust := Trust{Exe: self}
	var verified sync.Map
	c := &Client{SocketPath: sock, KeepAlive: true, VerifyPeer: func(p Peer) error {
		verified.Store(p, true)
		return trust.Verify(p)
	}}
	before := openFDs(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 150 {
				if (g+i)%10 == 0 {
					ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
					if _, err := c.Deferred(ctx); err == nil {
						t.Error("a stalled body read whole")
					}
					cancel()
					continue
				}
				st, err := c.Status(context.Background())
				if err != nil || st.PID != os.Getpid() {
					t.Errorf("status %+v %v", st, err)
					return
				}
			}
		})
	}
	wg.Wait()
	c.CloseIdle()
	n := 0
	verified.Range(func(k, _ any) bool { n++; return true })
	if n != 1 {
		t.Errorf("%d peers verified", n)
	}
	noMoreFDs(t, before)
}

// What net/http's server sends, read by both kinds of client: many small
// chunks, declared trailers, a handler that closes the connection, a
// body net/http ends with the connection, its own 400 to a bad request,
// a header value holding colons, and a header given twice.
func TestNetHTTPResponses(t *testing.T) {
	want := strings.Repeat(`{"pid":7}`, 1) // what every handler's body decodes to
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/status": // many chunks
			for _, b := range []byte(want) {
				w.Write([]byte{b})
				w.(http.Flusher).Flush()
			}
		case "/v1/calls": // trailers
			w.Header().Set("Trailer", "X-Done")
			io.WriteString(w, `{"calls":[]}`)
			w.(http.Flusher).Flush()
			w.Header().Set("X-Done", "yes")
		case "/v1/deferred": // the handler closes the connection
			w.Header().Set("Connection", "close")
			io.WriteString(w, `{"sessions":[]}`)
		case "/v1/hook": // odd header values
			w.Header().Set("X-Odd", "a: b: c")
			w.Header().Add("X-Twice", "1")
			w.Header().Add("X-Twice", "2")
			w.Header().Set("Content-Length", "2")
			io.WriteString(w, "{}")
		}
	})
	for _, keep := range []bool{false, true} {
		c := &Client{SocketPath: srv.SocketPath, KeepAlive: keep}
		ctx := context.Background()
		for range 3 {
			if st, err := c.Status(ctx); err != nil || st.PID != 7 {
				t.Errorf("keep %v: many chunks: %+v %v", keep, st, err)
			}
			if calls, err := c.Calls(ctx, ""); err != nil || calls == nil {
				t.Errorf("keep %v: trailers: %v %v", keep, calls, err)
			}
			if _, err := c.Deferred(ctx); err != nil {
				t.Errorf("keep %v: a closed connection: %v", keep, err)
			}
			if _, err := c.Hook(ctx, api.HookRequest{}); err != nil {
				t.Errorf("keep %v: odd headers: %v", keep, err)
			}
		}
		c.CloseIdle()
	}
	// net/http's own answer to a request it cannot parse.
	s, err := dialUnix(srv.SocketPath)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	io.WriteString(s, "GET /v1/status HTTP/1.1\r\nHost: toolgate\r\nBad Header\r\n\r\n")
	r := bufio.NewReader(s)
	left := maxHead
	line, err := readLine(r, &left)
	if code, perr := parseStatus(line); err != nil || perr != nil || code != 400 {
		t.Fatalf("status line %q %v %v", line, err, perr)
	}
	head, err := readHeader(r)
	if err != nil || head["connection"] != "close" {
		t.Errorf("net/http's 400: %q %v", head, err)
	}
}

// Two daemons, one in another process, dialled at once by many
// goroutines that also close their sockets twice (a closed descriptor's
// number goes to the next socket at once): each connection's credentials
// are its own listener's, never those of the socket its number went to.
func TestPeerCredentialsUnderDescriptorReuse(t *testing.T) {
	other := socketPath(t)
	py := listener(t, other, "close")
	own := rawPeer(t, func(c net.Conn) {})
	var wg sync.WaitGroup
	for g := range 8 {
		sock, want := own, os.Getpid()
		if g%2 == 0 {
			sock, want = other, py.Process.Pid
		}
		wg.Go(func() {
			var stale []*socket
			for range 300 {
				s, err := dialUnix(sock)
				if err != nil {
					continue // a full backlog
				}
				p, err := s.peer()
				if err != nil || p.PID != want {
					t.Errorf("peer %+v %v on %s, want pid %d", p, err, sock, want)
				}
				s.Close()
				stale = append(stale, s)
				if len(stale) > 4 {
					stale[0].Close() // again: its number is someone else's now
					stale = stale[1:]
				}
			}
		})
	}
	wg.Wait()
}

// listener starts this test binary again as a listener on sock in another
// process (TestListenerProcess), and returns once it listens. With
// "answer" it answers every request with a status of pid 1, with "close"
// it closes every connection it accepts.
func listener(t *testing.T, sock, mode string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestListenerProcess$")
	cmd.Env = append(os.Environ(), "TOOLGATE_TEST_LISTEN="+sock, "TOOLGATE_TEST_LISTEN_MODE="+mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "up\n" {
		t.Fatalf("the listener process: %q", line)
	}
	return cmd
}

// TestListenerProcess is the listener of listener, in a process of its
// own; run otherwise, it does nothing.
func TestListenerProcess(t *testing.T) {
	sock := os.Getenv("TOOLGATE_TEST_LISTEN")
	if sock == "" {
		return
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("up")
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		if os.Getenv("TOOLGATE_TEST_LISTEN_MODE") == "answer" {
			if n, _ := c.Read(make([]byte, 65536)); n > 0 {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\n{\"pid\":1}")
			}
		}
		c.Close()
	}
}
