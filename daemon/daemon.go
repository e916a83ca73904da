package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/fleet"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/paths"
	"github.com/toolgate/toolgate/policy"
	"golang.org/x/sys/unix"
)

// Config configures a daemon.
type Config struct {
	Paths    paths.Paths
	Logger   *slog.Logger
	Version  string
	IdleExit time.Duration // exit after this long with no session and no request; never when 0
	// Ready, when set, receives one line once the daemon accepts
	// connections (toolgate run waits on it when it starts a daemon).
	Ready io.Writer
	// ConfigDir is toolgate's configuration directory, which sessions must
	// not touch ($XDG_CONFIG_HOME/toolgate).
	ConfigDir string
	// Fleet is the DSN of the fleet's PostgreSQL (package fleet), with an
	// agent-host role: the daemon publishes its audit there and Postgres
	// arbitrates its approvals. Empty: a single host, nothing changes.
	Fleet string
}

// Daemon is the gate daemon: the only process that opens the ledger.
type Daemon struct {
	cfg      Config
	log      *slog.Logger
	ledger   *ledger.Ledger
	sessions *sessions
	gate     *gate

	started time.Time

	inflight atomic.Int64
	lastSeen atomic.Int64 // unix nanoseconds of the last request
	// broken is why the daemon can no longer serve (health.go), once
	// it cannot.
	broken atomic.Value // string
}

// ErrRunning is returned by Serve when another daemon holds the runtime
// directory.
var ErrRunning = errors.New("a toolgate daemon is already running for this runtime directory")

// Serve runs a daemon until ctx ends or it has been idle for IdleExit.
// In-flight requests finish and the ledger is closed before it returns.
func Serve(ctx context.Context, cfg Config) error {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Paths.MakeRuntimeDir(); err != nil {
		return err
	}
	lock, err := paths.Lock(cfg.Paths.DaemonLock(), false)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrRunning
	}
	if err != nil {
		return fmt.Errorf("daemon lock: %w", err)
	}
	defer lock.Close()
	if err := cfg.Paths.MakeStateDir(); err != nil {
		return err
	}
	go policy.Prepare() // while the ledger opens
	l, err := ledger.Open(cfg.Paths.LedgerDir(), ledger.Options{Logger: log})
	if ledger.IsLocked(err) {
		return fmt.Errorf("%w%s", err, heldBy(cfg.Paths))
	}
	if err != nil {
		return err
	}
	defer closeLedger(l, cfg.Paths.LedgerDir(), log)
	vitals, err := newVitals(cfg.Paths)
	if err != nil {
		return err
	}
	gateLn, err := bindSocket(cfg.Paths.Socket())
	if err != nil {
		return err
	}
	approveLn, err := bindSocket(cfg.Paths.ApproveSocket())
	if err != nil {
		gateLn.Close()
		return err
	}
	removeRecord, err := writeRecord(cfg.Paths)
	if err != nil {
		gateLn.Close()
		approveLn.Close()
		return err
	}
	defer removeRecord()
	exe, _ := os.Executable()
	d := &Daemon{cfg: cfg, log: log, ledger: l, sessions: newSessions(l, policy.GuardPaths{Gate: cfg.Paths, ConfigDir: cfg.ConfigDir, Exe: exe})}
	d.gate = &gate{ledger: l, sessions: d.sessions, log: log, broker: newBroker(), rearmc: make(chan struct{}, 1), stopping: make(chan struct{})}
	d.started = time.Now().UTC().Truncate(time.Second)
	if cfg.Fleet != "" {
		node, err := fleet.NewNode(cfg.Fleet, l, d.gate.arbitrated, log)
		if err != nil {
			return err
		}
		defer node.Close()
		d.gate.fleet = node
	}
	d.lastSeen.Store(time.Now().UnixNano())
	if err := d.sessions.loadActive(ctx); err != nil {
		log.Error("load the active sessions", "err", err)
	}
	d.ingestSpools(ctx)
	paths.ClearStopNotes(cfg.Paths) // what the last daemon left: this one serves
	if err := d.serve(ctx, gateLn, approveLn, vitals); err != nil {
		return err
	}
	if why, _ := d.broken.Load().(string); why != "" {
		return &BrokenError{Why: why}
	}
	return nil
}

// BrokenError is Serve's error when the daemon stopped because it could no
// longer serve (health.go).
type BrokenError struct{ Why string }

func (e *BrokenError) Error() string { return "the daemon stopped: " + e.Why }

// shutdownGrace is how long the requests in flight may take to finish once
// the daemon stops.
const shutdownGrace = 10 * time.Second

func (d *Daemon) serve(ctx context.Context, gateLn, approveLn net.Listener, vitals *vitals) error {
	newServer := func(h http.Handler) *http.Server {
		return &http.Server{Handler: h, ConnContext: withPeer, ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: slog.NewLogLogger(d.log.Handler(), slog.LevelWarn)}
	}
	gateSrv, approveSrv := newServer(d.handler()), newServer(d.approverHandler())
	held := holdSocketFiles(d.cfg.Paths.Socket(), d.cfg.Paths.ApproveSocket())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	if d.cfg.IdleExit > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); d.exitWhenIdle(ctx, cancel) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); d.watchHealth(ctx, vitals, cancel) }()
	wg.Add(1)
	go func() { defer wg.Done(); d.gate.expireLoop(ctx) }()
	if d.gate.fleet != nil {
		wg.Add(1)
		go func() { defer wg.Done(); d.gate.fleet.Run(ctx) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); d.endAbandoned(ctx) }()
	errc := make(chan error, 2)
	go func() { errc <- gateSrv.Serve(gateLn) }()
	go func() { errc <- approveSrv.Serve(approveLn) }()
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.keepSockets(ctx, map[string]*http.Server{d.cfg.Paths.Socket(): gateSrv, d.cfg.Paths.ApproveSocket(): approveSrv}, held)
	}()
	if d.cfg.Ready != nil {
		fmt.Fprintln(d.cfg.Ready, "ready")
	}
	d.log.Info("daemon listening", "socket", d.cfg.Paths.Socket(), "ledger", d.cfg.Paths.LedgerDir(), "pid", os.Getpid())
	var err error
	select {
	case err = <-errc:
		cancel()
	case <-ctx.Done():
	}
	// Stop taking requests and let the ones in flight finish. Waits for a
	// person end at once: their approvals stay pending in the ledger, and
	// their callers ask the next daemon again. So a stop takes as long as
	// the slowest short request, not as long as a person.
	close(d.gate.stopping)
	shutdown, stop := context.WithTimeout(context.Background(), shutdownGrace)
	defer stop()
	approveSrv.Shutdown(shutdown)
	if serr := gateSrv.Shutdown(shutdown); err == nil {
		err = serr
	}
	wg.Wait()
	d.log.Info("daemon stopped")
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// exitWhenIdle cancels the daemon once it has had no live session and no
// request for IdleExit.
func (d *Daemon) exitWhenIdle(ctx context.Context, exit context.CancelFunc) {
	tick := time.NewTicker(min(d.cfg.IdleExit/4+time.Millisecond, 5*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		idle := time.Since(time.Unix(0, d.lastSeen.Load()))
		if d.inflight.Load() == 0 && d.sessions.active() == 0 && idle >= d.cfg.IdleExit && !d.anyPending(ctx) {
			d.log.Info("idle: exiting", "idle", idle.Round(time.Second))
			exit()
			return
		}
	}
}

// abandonedCheck is how often the daemon looks for sessions whose
// processes are all gone.
const abandonedCheck = time.Second

// endAbandoned ends, as abandoned, every session whose processes are all
// gone without ending it (a toolgate run killed with SIGKILL, claude with
// it): its approvals are settled, and the daemon can idle out.
func (d *Daemon) endAbandoned(ctx context.Context) {
	tick := time.NewTicker(abandonedCheck)
	defer tick.Stop()
	for {
		for _, id := range d.sessions.abandoned() {
			if _, err := d.gate.endSession(ctx, id, api.EndAbandoned); err != nil {
				d.log.Error("end an abandoned session", "session", id, "err", err)
				continue
			}
			d.log.Info("session abandoned: its processes are gone", "session", id)
			d.ingestSpool(ctx, id, true)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// anyPending reports whether an approval waits: the daemon stays to expire
// it on time. A ledger that cannot say holds nothing the daemon could
// expire: it does not keep an idle daemon up.
func (d *Daemon) anyPending(ctx context.Context) bool {
	pending, err := d.ledger.Pending(ctx)
	if err != nil {
		d.log.Warn("idle: the ledger cannot list its pending approvals", "err", err)
		return false
	}
	return len(pending) > 0
}

func (d *Daemon) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(api.RouteStatus, d.handleStatus)
	mux.HandleFunc(api.RouteRegister, d.handleRegister)
	mux.HandleFunc(api.RouteSession, d.handleSession)
	mux.HandleFunc(api.RouteEndSession, d.handleEndSession)
	mux.HandleFunc(api.RouteSessionCalls, d.handleSessionCalls)
	mux.HandleFunc(api.RouteCalls, d.handleCalls)
	mux.HandleFunc(api.RouteHook, d.handleHook)
	mux.HandleFunc(api.RoutePrompt, d.handlePrompt)
	mux.HandleFunc(api.RouteWait, d.handleWait)
	mux.HandleFunc(api.RouteClaudePID, d.handleClaudePID)
	mux.HandleFunc(api.RouteOutcomes, d.handleOutcomes)
	mux.HandleFunc(api.RouteResume, d.handleResume)
	mux.HandleFunc(api.RouteDeferred, d.handleDeferred)
	return d.guard(mux)
}

// guard refuses what must never reach a handler: another uid, a browser,
// another protocol version.
func (d *Daemon) guard(next http.Handler) http.Handler {
	uid := os.Getuid()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.inflight.Add(1)
		defer d.inflight.Add(-1)
		d.lastSeen.Store(time.Now().UnixNano())
		w.Header().Set(api.HeaderProtocol, strconv.Itoa(api.ProtocolVersion))
		p, ok := peerFrom(r.Context())
		switch {
		case !ok || p.UID != uid:
			d.log.Warn("refused a request from another user", "uid", p.UID, "pid", p.PID, "path", r.URL.Path)
			writeError(w, http.StatusForbidden, "forbidden", "only the daemon's own user may use it")
		case r.Header.Get("Origin") != "" || r.Header.Get("Referer") != "":
			d.log.Warn("refused a request from a browser", "pid", p.PID, "origin", r.Header.Get("Origin"))
			writeError(w, http.StatusForbidden, "browser_request", "requests from browsers are refused")
		case r.Header.Get(api.HeaderProtocol) != strconv.Itoa(api.ProtocolVersion):
			writeError(w, http.StatusBadRequest, "protocol_mismatch",
				fmt.Sprintf("this daemon speaks protocol %d, the client %q; restart the daemon after an upgrade", api.ProtocolVersion, r.Header.Get(api.HeaderProtocol)))
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// maxRequest bounds a request body: a hook event with a very large input
// is refused rather than buffered without end.
const maxRequest = 32 << 20

// decodeRequest decodes the request body into v. It reads the body to its
// end: only then does the server watch the connection, so that a handler
// that waits (a PermissionRequest, an approval) learns when its caller is
// gone.
func decodeRequest(w http.ResponseWriter, r *http.Request, v any) bool {
	body := http.MaxBytesReader(w, r.Body, maxRequest)
	dec := json.NewDecoder(body)
	err := dec.Decode(v)
	if err == nil {
		_, err = io.Copy(io.Discard, body)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "request body: "+err.Error())
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(api.Error{Message: msg, Code: code})
}

// fail answers an error from the gate's own machinery.
func (d *Daemon) fail(w http.ResponseWriter, r *http.Request, err error) {
	var invalid policy.LoadErrors
	switch {
	case errors.Is(err, errUnknownSession), errors.Is(err, ledger.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, errBadEvent):
		writeError(w, http.StatusBadRequest, "bad_event", err.Error())
	case errors.As(err, new(*notOwnerError)):
		var no *notOwnerError
		errors.As(err, &no)
		d.incident(r.Context(), no.session, api.Incident{What: "not_owner", PID: no.caller, Detail: "an installed hook's event"})
		writeError(w, http.StatusForbidden, "not_owner", err.Error())
	case errors.As(err, &invalid):
		writeError(w, http.StatusUnprocessableEntity, "invalid_policy", err.Error())
	default:
		d.log.Error("request failed", "path", r.URL.Path, "err", err)
		writeError(w, http.StatusServiceUnavailable, "internal", "the gate could not complete the request: "+err.Error())
	}
}

func (d *Daemon) handleStatus(w http.ResponseWriter, r *http.Request) {
	pending, _ := d.ledger.Pending(r.Context())
	broken, _ := d.broken.Load().(string)
	writeJSON(w, api.StatusResponse{Protocol: api.ProtocolVersion, Version: d.cfg.Version, PID: os.Getpid(),
		Ledger: d.cfg.Paths.LedgerDir(), Sessions: d.sessions.active(), RuntimeDir: d.cfg.Paths.RuntimeDir,
		StartedAt: d.started, Pending: len(pending), Fleet: d.gate.fleet != nil, Broken: broken})
}

func (d *Daemon) handleRegister(w http.ResponseWriter, r *http.Request) {
	var req api.RegisterRequest
	if !decodeRequest(w, r, &req) {
		return
	}
	p, _ := peerFrom(r.Context())
	// A session's supervisor is its caller or a process the caller started:
	// any other (init, a person's shell) would make every approval from
	// its descendants a self-approval.
	if req.SupervisorPID != 0 && req.SupervisorPID != p.PID &&
		(req.SupervisorPID <= 1 || !strictlyDescendsFrom(req.SupervisorPID, p.PID)) {
		writeError(w, http.StatusBadRequest, "bad_request", "supervisor_pid must be the caller or a process it started")
		return
	}
	s, err := d.sessions.register(r.Context(), "ses_"+ulid.Make().String(), req, p.PID)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, public(d.sessions.record(s)))
}

func (d *Daemon) handleSession(w http.ResponseWriter, r *http.Request) {
	rec, err := d.ledger.Session(r.Context(), r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, public(rec))
}

// handleEndSession ends a session: only its owner may (the toolgate run
// that registered it). A process that could end another's session could
// take it off the list of gated sessions, and approve its calls.
func (d *Daemon) handleEndSession(w http.ResponseWriter, r *http.Request) {
	s, ok := d.ownedSession(w, r, "end the session")
	if !ok {
		return
	}
	var req api.EndSessionRequest
	if r.ContentLength != 0 && !decodeRequest(w, r, &req) {
		return
	}
	switch req.Reason {
	case "":
		req.Reason = api.EndEnded
	case api.EndEnded:
	case api.EndInterrupted:
		if s.settings.Installed {
			// No run of toolgate's to stop: what an installed session's
			// hooks (or the model's code under its claude) may end, they
			// end as ended, and its asks go to Claude Code's dialog.
			writeError(w, http.StatusBadRequest, "bad_request", "an installed session is not interrupted; it ends when its claude does")
			return
		}
	default:
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("a session ends %s or %s, not %q", api.EndEnded, api.EndInterrupted, req.Reason))
		return
	}
	rec, err := d.gate.endSession(r.Context(), s.id, req.Reason)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.ingestSpool(r.Context(), rec.ID, true)
	out := api.EndedSession{Session: public(rec)}
	if head, err := d.ledger.Head(); err == nil {
		out.AuditHead = &head
	}
	writeJSON(w, out)
}

// ownedSession is the session a request names, when its caller owns it;
// otherwise it answers 403 not_owner, and keeps the attempt in the audit.
func (d *Daemon) ownedSession(w http.ResponseWriter, r *http.Request, what string) (*gateSession, bool) {
	s, err := d.sessions.get(r.Context(), r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return nil, false
	}
	p, _ := peerFrom(r.Context())
	if d.sessions.owns(s, p.PID) {
		return s, true
	}
	who := actorOf(p)
	d.log.Warn("refused a request from a process that does not own the session", "session", s.id, "pid", p.PID, "exe", who.Exe, "what", what)
	d.incident(r.Context(), s.id, api.Incident{What: "not_owner", PID: p.PID, Exe: who.Exe, Detail: what})
	writeError(w, http.StatusForbidden, "not_owner", "only the toolgate run that started session "+s.id+" may "+what)
	return nil, false
}

// incident keeps an incident in the audit; failing to is logged.
func (d *Daemon) incident(ctx context.Context, subject string, inc api.Incident) {
	if err := d.ledger.RecordIncident(context.WithoutCancel(ctx), subject, inc); err != nil {
		d.log.Error("record an incident", "subject", subject, "err", err)
	}
}

func (d *Daemon) handleSessionCalls(w http.ResponseWriter, r *http.Request) {
	d.listCalls(w, r, r.PathValue("id"))
}

func (d *Daemon) handleCalls(w http.ResponseWriter, r *http.Request) {
	d.listCalls(w, r, r.URL.Query().Get("session"))
}

func (d *Daemon) listCalls(w http.ResponseWriter, r *http.Request, session string) {
	calls, err := d.ledger.Calls(r.Context(), ledger.CallQuery{SessionID: session})
	if err != nil {
		d.fail(w, r, err)
		return
	}
	// In the order they were proposed (the ledger keeps them by id).
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].ProposedAt.Before(calls[j].ProposedAt) })
	writeJSON(w, api.CallsResponse{Calls: append([]api.Call{}, calls...)})
}

func (d *Daemon) handleHook(w http.ResponseWriter, r *http.Request) {
	var req api.HookRequest
	if !decodeRequest(w, r, &req) {
		return
	}
	var s *gateSession
	var err error
	if req.Installed != nil {
		p, _ := peerFrom(r.Context())
		s, err = d.sessions.installed(r.Context(), req.Event, *req.Installed, p.PID)
	} else {
		s, err = d.sessions.get(r.Context(), req.SessionID)
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	resp, err := d.gate.hook(r.Context(), s, req.Event)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, resp)
}

func (d *Daemon) handlePrompt(w http.ResponseWriter, r *http.Request) {
	var req api.PromptRequest
	if !decodeRequest(w, r, &req) {
		return
	}
	s, err := d.sessions.get(r.Context(), req.SessionID)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if req.ToolUseID == "" || req.ToolName == "" || !json.Valid(req.Input) {
		writeError(w, http.StatusBadRequest, "bad_request", "tool_use_id, tool_name and input are required")
		return
	}
	p, _ := peerFrom(r.Context())
	v, err := d.gate.prompt(r.Context(), s, api.Call{ToolUseID: req.ToolUseID, ToolName: req.ToolName, Input: req.Input}, p.PID)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, v)
}

// handleOutcomes records what became of a session's calls: only its owner
// (the toolgate run that reads Claude Code's transcript) may report them.
func (d *Daemon) handleOutcomes(w http.ResponseWriter, r *http.Request) {
	var req api.OutcomesRequest
	if !decodeRequest(w, r, &req) {
		return
	}
	s, ok := d.ownedSession(w, r, "report what its calls did")
	if !ok {
		return
	}
	undecided, err := d.gate.outcomes(r.Context(), s, req.Outcomes)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, api.OutcomesResponse{Undecided: undecided})
}
