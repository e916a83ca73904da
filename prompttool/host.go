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
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// Host serves the tool over streamable HTTP on a random loopback port,
// behind a random bearer token. mcp-go's DNS-rebinding protection stays on.
type Host struct {
	URL   string // http://127.0.0.1:PORT/mcp
	Token string // the bearer token Claude Code must send

	srv *http.Server
	ln  net.Listener
}

// Listen starts serving d. Close stops it.
func Listen(d Decider, version string) (*Host, error) {
	token, err := randomToken()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("prompt tool: listen: %w", err)
	}
	mcpHTTP := server.NewStreamableHTTPServer(NewServer(d, version), server.WithEndpointPath("/mcp"))
	h := &Host{URL: fmt.Sprintf("http://%s/mcp", ln.Addr()), Token: token, ln: ln}
	h.srv = &http.Server{Handler: h.authorize(mcpHTTP), ReadHeaderTimeout: 10 * time.Second}
	go h.srv.Serve(ln)
	return h, nil
}

// authorize refuses any request without the bearer token.
func (h *Host) authorize(next http.Handler) http.Handler {
	want := []byte("Bearer " + h.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
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
