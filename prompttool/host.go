package prompttool

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// Host serves the tool over streamable HTTP on a random loopback port,
// behind a random bearer token. mcp-go's DNS-rebinding protection stays on.
// Other endpoints may share the listener and its token (Handle): toolgate
// run's http hooks do.
type Host struct {
	URL   string // http://127.0.0.1:PORT/mcp, or "" when it serves no tool
	Base  string // http://127.0.0.1:PORT
	Token string // the bearer token Claude Code must send

	srv *http.Server
	mux *http.ServeMux
	ln  net.Listener
}

// Listen starts serving d. Close stops it. With a nil d it serves no
// tool, only the endpoints Handle adds (URL is empty).
func Listen(d Decider, version string) (*Host, error) {
	token, err := randomToken()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("prompt tool: listen: %w", err)
	}
	base := fmt.Sprintf("http://%s", ln.Addr())
	h := &Host{Base: base, Token: token, ln: ln, mux: http.NewServeMux()}
	if d != nil {
		mcpHTTP := server.NewStreamableHTTPServer(NewServer(d, version), server.WithEndpointPath("/mcp"))
		h.URL = base + "/mcp"
		h.mux.Handle("/mcp", h.authorize(mcpHTTP))
	}
	// No idle timeout: a connection Claude Code keeps for its next request
	// is never closed under it (a request lost that way is a failed hook).
	// A request's body is read before its handler waits (for a
	// verdict, an approval): ReadTimeout bounds the reading alone.
	// IdleTimeout is negative: net/http takes ReadTimeout for a zero one.
	// A connection is kept only for requests that carry the token: another
	// process's would hold the listener's descriptors for ever.
	keep := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.Authorized(r) {
			w.Header().Set("Connection", "close")
		}
		h.mux.ServeHTTP(w, r)
	})
	h.srv = &http.Server{Handler: keep, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: readTimeout, IdleTimeout: -1,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, peerKey{}, &peer{conn: c})
		}}
	go h.srv.Serve(ln)
	return h, nil
}

// readTimeout bounds the reading of one request.
var readTimeout = 30 * time.Second

// Handle serves another endpoint on the listener. The handler decides
// what a request without the token gets (Authorized).
func (h *Host) Handle(pattern string, handler http.Handler) { h.mux.Handle(pattern, handler) }

// Authorized reports whether a request carries the bearer token.
func (h *Host) Authorized(r *http.Request) bool {
	return subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+h.Token)) == 1
}

// authorize refuses any request without the bearer token.
func (h *Host) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.Authorized(r) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// peerKey carries a request's connection in its context.
type peerKey struct{}

// peer is one accepted connection, and what a check found of the process
// at its other end.
type peer struct {
	conn net.Conn
	once sync.Once
	ok   bool
}

// PeerIs reports whether the process at the other end of r's connection
// passes is. The check runs once a connection: every later request on it
// comes from the same socket.
func PeerIs(r *http.Request, is func(net.Conn) bool) bool {
	p, _ := r.Context().Value(peerKey{}).(*peer)
	if p == nil {
		return false
	}
	p.once.Do(func() { p.ok = is(p.conn) })
	return p.ok
}

// Close stops the server, letting in-flight calls finish for a moment.
func (h *Host) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := h.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = h.srv.Close()
	}
	return err
}

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
