// Package web is toolgate web: a small page for people to approve or deny
// asks from a browser, over the local daemon's approver socket or the
// fleet's PostgreSQL (a Queue). It shows each ask in full as render shows
// it, decides with a reason, updates itself live (server-sent events) and
// lists recent decisions.
//
// It binds to loopback and grows no login system: it prints a one-time
// code on the person's terminal, which the sign-in form exchanges for an
// HttpOnly, SameSite=Strict session cookie. The code is never in a URL, so
// it is on no command line (a browser started on a link) and in no
// browser history, where the model's code, which reads what the person's
// processes show, would find it. Wrong codes never lock the person out:
// guessing 58 bits over loopback takes centuries. Remote access goes through the person's SSH
// tunnel or reverse proxy (Config.Origins). Every decision needs the
// session cookie, the page's CSRF token in a header, and an Origin that is
// the page's own; every request a Host that is the page's own (against DNS
// rebinding). The cookie alone opens nothing: a browser sends it to every
// port of 127.0.0.1, a server the model runs there included. The token is
// given once, in the answer to the sign-in, and kept in the page's own
// storage (which is per port); every API request carries it. The page is plain HTML, CSS and JavaScript embedded in the
// binary, under a Content-Security-Policy that forbids inline scripts.
//
// It must not import the daemon, the ledger or the policy engine.
package web

import (
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

//go:embed static
var static embed.FS

var (
	pageTemplate     = template.Must(template.ParseFS(static, "static/index.html"))
	signInTemplate   = template.Must(template.ParseFS(static, "static/signin.html"))
	signedInTemplate = template.Must(template.ParseFS(static, "static/signedin.html"))
)

// Config configures a page server.
type Config struct {
	Queue Queue
	// Origins are the origins the page is served as: its own listening
	// address (http://127.0.0.1:PORT) and any a reverse proxy adds.
	Origins []string
	// Webhook, when set, receives a JSON POST for every new ask.
	Webhook string
	Log     *slog.Logger
}

// Server serves the page.
type Server struct {
	cfg   Config
	log   *slog.Logger
	hosts map[string]bool
	code  string

	mu       sync.Mutex
	codeUsed bool
	sessions map[string]string // session cookie -> CSRF token
	subs     map[chan []byte]struct{}
	state    []byte
	seen     map[string]bool // asks already announced to the webhook
}

// New returns a server with a fresh one-time code.
func New(cfg Config) (*Server, error) {
	if len(cfg.Origins) == 0 {
		return nil, errors.New("web: no origin to serve as")
	}
	s := &Server{cfg: cfg, log: cfg.Log, hosts: map[string]bool{}, code: newCode(),
		sessions: map[string]string{}, subs: map[chan []byte]struct{}{}, seen: map[string]bool{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for _, o := range cfg.Origins {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("web: %q is not an origin (scheme://host[:port])", o)
		}
		s.hosts[u.Host] = true
	}
	return s, nil
}

// URL is the page to open: the first origin. It holds no secret.
func (s *Server) URL() string { return s.cfg.Origins[0] + "/" }

// Code is the one-time code that signs a browser in: for the person's
// terminal only.
func (s *Server) Code() string { return s.code }

// codeAlphabet has no characters a person confuses (0/O, 1/I/L) and no
// vowels (no words); a code is twelve of them, 57 bits, shown in three
// groups of four.
const codeAlphabet = "23456789BCDFGHJKMNPQRSTVWXYZ"

func newCode() string {
	out := make([]byte, 0, 14)
	for i := range 12 {
		if i > 0 && i%4 == 0 {
			out = append(out, '-')
		}
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(codeAlphabet))))
		out = append(out, codeAlphabet[n.Int64()])
	}
	return string(out)
}

// normalCode is a typed code as it compares: upper case, without the
// spaces and dashes a person may type between groups.
func normalCode(c string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return -1
		}
		return r
	}, strings.ToUpper(strings.TrimSpace(c)))
}

func random() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Handler serves the page and its API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	sub, _ := fs.Sub(static, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(sub)))
	mux.HandleFunc("GET /{$}", s.handlePage)
	mux.HandleFunc("POST /signin", s.handleSignIn)
	mux.HandleFunc("GET /api/state", s.authed(s.handleState))
	mux.HandleFunc("GET /api/events", s.authed(s.handleEvents))
	mux.HandleFunc("POST /api/decide", s.authed(s.handleDecide))
	return s.secure(mux)
}

// secure sets the headers every response carries and refuses a Host that
// is not the page's own (a DNS-rebinding page reaching loopback).
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "+
			"img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin") // a form's POST then carries the page's Origin, not "null"
		h.Set("Cache-Control", "no-store")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if !s.hosts[r.Host] {
			http.Error(w, "unknown host", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

const cookieName = "toolgate_session"

// session is the CSRF token of the request's session, if it has one.
func (s *Server) session(r *http.Request) (string, bool) {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	csrf, ok := s.sessions[c.Value]
	return csrf, ok
}

func (s *Server) authed(next func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		csrf, ok := s.session(r)
		if !ok {
			http.Error(w, "not signed in: open the page toolgate web printed and enter its code", http.StatusUnauthorized)
			return
		}
		// The cookie reaches any server on 127.0.0.1; the token only the
		// page (EventSource sends no header: its URL carries it).
		token := r.Header.Get("X-Toolgate-CSRF")
		if token == "" && r.Method == http.MethodGet {
			token = r.URL.Query().Get("csrf")
		}
		if subtle.ConstantTimeCompare([]byte(token), []byte(csrf)) != 1 {
			http.Error(w, "missing or wrong CSRF token: reload the page, or sign in again", http.StatusForbidden)
			return
		}
		next(w, r, csrf)
	}
}

// handlePage serves the page to a session (without its token: the page
// has it in its storage), and the sign-in form to anyone else.
func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.session(r); !ok {
		s.signInForm(w, http.StatusOK, "")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	pageTemplate.Execute(w, nil)
}

func (s *Server) signInForm(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	signInTemplate.Execute(w, struct{ Message string }{message})
}

// handleSignIn exchanges the one-time code for a session: posted by the
// page's own form (its Origin), once. A wrong code is logged and changes
// nothing: the person's code still works.
func (s *Server) handleSignIn(w http.ResponseWriter, r *http.Request) {
	if !s.sameOrigin(r.Header.Get("Origin")) {
		http.Error(w, "cross-origin sign-in refused", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	typed := normalCode(r.PostFormValue("code"))
	s.mu.Lock()
	used := s.codeUsed
	ok := !used && subtle.ConstantTimeCompare([]byte(typed), []byte(normalCode(s.code))) == 1
	id, csrf := random(), random()
	if ok {
		s.codeUsed = true
		s.sessions[id] = csrf
	}
	s.mu.Unlock()
	if !ok {
		s.log.Warn("web: refused a sign-in", "remote", r.RemoteAddr, "code_used", used)
		message := "That is not the code. Type the one toolgate web printed in its terminal."
		if used {
			message = "This code has signed a browser in already, and works once: stop toolgate web and start it again for a new one."
		}
		s.signInForm(w, http.StatusForbidden, message)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: strings.HasPrefix(s.cfg.Origins[0], "https:")})
	// The token goes in this answer only: the page's script keeps it
	// in its storage and opens the page.
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	signedInTemplate.Execute(w, struct{ CSRF string }{csrf})
}

func (s *Server) handleState(w http.ResponseWriter, r *http.Request, _ string) {
	st, err := s.cfg.Queue.State(r.Context())
	if err != nil {
		http.Error(w, "the queue is out of reach: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(st)
}

// decideRequest is what the page posts.
type decideRequest struct {
	ID       string `json:"id"`
	Decision string `json:"decision"` // approve or deny
	Reason   string `json:"reason"`
}

// handleDecide decides an ask, for a session, with its CSRF token, from
// the page's own origin: a page elsewhere cannot make the browser decide.
func (s *Server) handleDecide(w http.ResponseWriter, r *http.Request, csrf string) {
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("X-Toolgate-CSRF")), []byte(csrf)) != 1 {
		http.Error(w, "missing or wrong CSRF token", http.StatusForbidden)
		return
	}
	if !s.sameOrigin(r.Header.Get("Origin")) {
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "want application/json", http.StatusUnsupportedMediaType)
		return
	}
	var req decideRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil ||
		req.ID == "" || (req.Decision != "approve" && req.Decision != "deny") {
		http.Error(w, `want {"id": ..., "decision": "approve"|"deny", "reason": ...}`, http.StatusBadRequest)
		return
	}
	err := s.cfg.Queue.Decide(r.Context(), req.ID, req.Decision == "approve", req.Reason)
	var ref *Refusal
	switch {
	case errors.As(err, &ref):
		http.Error(w, ref.Message, ref.Status)
		return
	case err != nil:
		http.Error(w, "the queue is out of reach: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	s.log.Info("web: decided", "approval", req.ID, "decision", req.Decision, "remote", r.RemoteAddr)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintln(w, `{"ok": true}`)
}

func (s *Server) sameOrigin(origin string) bool {
	for _, o := range s.cfg.Origins {
		if origin == o {
			return true
		}
	}
	return false
}
