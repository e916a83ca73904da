package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/proc"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/policy"
)

// sessionSettings is the gate's configuration of a session, kept in the
// ledger with the session so that a restarted daemon can go on gating it.
type sessionSettings struct {
	PolicyName      string       `json:"policy_name"`
	ApprovalTimeout api.Duration `json:"approval_timeout"`
	OnAsk           string       `json:"on_ask"`
	// The home directory and the MCP servers' tools: what the session's
	// decisions depend on beside the policy and the working directory,
	// and what a replay of its calls reads (api.HistorySessionOf).
	api.SessionContext
	SupervisorPID int `json:"supervisor_pid"`
	// OwnerPID is the process that registered the session (its toolgate
	// run), from the kernel: only it may end the session or name its
	// claude.
	OwnerPID int `json:"owner_pid,omitempty"`
	// Contained: the session's claude runs in a Landlock domain (toolgate
	// run --containment), so that its processes carry no_new_privs.
	Contained bool `json:"contained,omitempty"`
	// Guard is what the session's tools must never touch.
	Guard *policy.Guard `json:"guard,omitempty"`
	// Claude and ClaudeArgs are the claude executable and the user's
	// arguments, for toolgate resume.
	Claude     string   `json:"claude,omitempty"`
	ClaudeArgs []string `json:"claude_args,omitempty"`
	// Installed marks a session of Claude Code's own, gated by the hook
	// toolgate install puts in its settings: its asks go through the
	// PermissionRequest hook, wait at most ApprovalTimeout, and are handed
	// to Claude Code's dialog when nobody decides. Its process is the
	// session's claude.
	Installed bool `json:"installed,omitempty"`
}

// alive reports whether a process of the session still runs: its
// supervisor or its claude.
func (st sessionSettings) alive(rec api.Session) bool {
	return proc.Alive(rec.ClaudePID) || !st.Installed && proc.Alive(st.SupervisorPID)
}

// gateSession is a session ready to decide calls.
type gateSession struct {
	id       string      // rec.ID, which never changes: read without the lock
	rec      api.Session // replaced under sessions.mu (end, refresh): read it with record
	settings sessionSettings
	decider  *policy.Session
}

// sessions caches the sessions the daemon gates; a session not in the
// cache (after a restart) is loaded from the ledger.
type sessions struct {
	ledger    *ledger.Ledger
	guard     policy.GuardPaths // what every session's guard protects
	mu        sync.Mutex
	byID      map[string]*gateSession
	installMu sync.Mutex // serializes the registration of installed hooks' sessions
	deferMu   sync.Mutex // serializes deferrals (gate.deferAsk): one call of a session defers
}

func newSessions(l *ledger.Ledger, guard policy.GuardPaths) *sessions {
	return &sessions{ledger: l, guard: guard, byID: map[string]*gateSession{}}
}

// errUnknownSession is a session id the ledger does not know.
var errUnknownSession = errors.New("unknown session")

func (ss *sessions) get(ctx context.Context, id string) (*gateSession, error) {
	ss.mu.Lock()
	s, ok := ss.byID[id]
	ss.mu.Unlock()
	if ok {
		return s, nil
	}
	rec, err := ss.ledger.Session(ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil, fmt.Errorf("session %q: %w", id, errUnknownSession)
	}
	if err != nil {
		return nil, err
	}
	doc, err := ss.ledger.Policy(ctx, rec.PolicySHA256)
	if err != nil {
		return nil, fmt.Errorf("session %s: policy: %w", id, err)
	}
	var settings sessionSettings
	if err := json.Unmarshal(rec.Settings, &settings); err != nil {
		return nil, fmt.Errorf("session %s: settings: %w", id, err)
	}
	if s, err = parseGateSession(rec, settings, doc); err != nil {
		return nil, err
	}
	ss.mu.Lock()
	ss.byID[id] = s
	ss.mu.Unlock()
	return s, nil
}

// parseGateSession is the session of a recorded policy document.
func parseGateSession(rec api.Session, settings sessionSettings, doc []byte) (*gateSession, error) {
	p, err := policy.Parse(settings.PolicyName, doc)
	if err != nil {
		return nil, err
	}
	return newGateSession(rec, settings, p), nil
}

// newGateSession is the session of a parsed policy.
func newGateSession(rec api.Session, settings sessionSettings, p *policy.Policy) *gateSession {
	decider := policy.NewSession(p, settings.Tools, rec.Cwd, settings.Home)
	decider.Guard = settings.Guard
	return &gateSession{id: rec.ID, rec: rec, settings: settings, decider: decider}
}

// register records a new session of toolgate run, owned by the process
// that registers it, and caches it.
func (ss *sessions) register(ctx context.Context, id string, r api.RegisterRequest, owner int) (*gateSession, error) {
	if r.SupervisorPID == 0 {
		r.SupervisorPID = owner
	}
	settings := sessionSettings{PolicyName: r.PolicyName, ApprovalTimeout: r.ApprovalTimeout, OnAsk: r.OnAsk,
		SessionContext: api.SessionContext{Home: r.Home, Tools: r.Tools},
		SupervisorPID:  r.SupervisorPID, OwnerPID: owner, Contained: r.Contained, Claude: r.Claude, ClaudeArgs: r.ClaudeArgs,
		Guard: ss.guardFor(r.Cwd, "", r.Writable, r.Protected...)}
	return ss.start(ctx, api.Session{ID: id, Cwd: r.Cwd}, settings, r.Policy)
}

// start records a session (or finds it recorded) with its policy and
// settings, and caches it.
func (ss *sessions) start(ctx context.Context, rec api.Session, settings sessionSettings, doc []byte) (*gateSession, error) {
	if settings.ApprovalTimeout <= 0 {
		settings.ApprovalTimeout = api.Duration(api.DefaultApprovalTimeout)
	}
	if settings.OnAsk == "" {
		settings.OnAsk = "wait"
	}
	raw, err := json.Marshal(settings)
	if err != nil {
		return nil, err
	}
	p, err := policy.Parse(settings.PolicyName, doc)
	if err != nil {
		return nil, err
	}
	if err := ss.ledger.StorePolicy(ctx, p.SHA256, doc); err != nil {
		return nil, err
	}
	rec.PolicySHA256, rec.PolicyVersion, rec.Settings = p.SHA256, p.Version, raw
	rec, existed, err := ss.ledger.StartSession(ctx, rec)
	if err != nil {
		return nil, err
	}
	if existed {
		return ss.get(ctx, rec.ID) // as recorded (another event of it was first)
	}
	s := newGateSession(rec, settings, p)
	ss.mu.Lock()
	ss.byID[rec.ID] = s
	ss.mu.Unlock()
	return s, nil
}

// end records the end of a session (reason api.EndEnded or
// api.EndAbandoned) and settles its pending approvals. The session stays
// cached while any of its processes lives: they stay gated.
func (ss *sessions) end(ctx context.Context, id, reason string) (api.Session, []ledger.Expired, error) {
	rec, expired, err := ss.ledger.EndSession(ctx, id, reason)
	if err != nil {
		return rec, nil, err
	}
	ss.mu.Lock()
	if s, ok := ss.byID[id]; ok {
		s.rec = rec
	}
	ss.mu.Unlock()
	return rec, expired, nil
}

// active counts the cached sessions that are not over, and forgets those
// that ended and whose processes are all gone.
func (ss *sessions) active() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	n := 0
	for id, s := range ss.byID {
		alive := s.settings.alive(s.rec)
		switch {
		case s.rec.EndedAt == nil && alive:
			n++
		case s.rec.EndedAt != nil && !alive:
			delete(ss.byID, id)
		}
	}
	return n
}

// abandoned are the cached sessions that never ended but whose processes
// are all gone (a toolgate run killed with SIGKILL, claude with it).
func (ss *sessions) abandoned() []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var ids []string
	for id, s := range ss.byID {
		if s.rec.EndedAt == nil && !s.settings.alive(s.rec) {
			ids = append(ids, id)
		}
	}
	return ids
}

// public is a session as the protocol shows it: without the gate's own
// settings.
func public(rec api.Session) api.Session {
	rec.Settings = nil
	return rec
}

// loadActive caches the sessions that were running when the daemon last
// stopped, so that their processes are known (and refused as approvers)
// from the first moment. Those whose processes are gone are over: their
// end is recorded (abandoned) by the daemon's first look at its sessions.
func (ss *sessions) loadActive(ctx context.Context) error {
	all, err := ss.ledger.Sessions(ctx)
	if err != nil {
		return err
	}
	for _, rec := range all {
		if rec.EndedAt != nil {
			continue
		}
		if _, err := ss.get(ctx, rec.ID); err != nil {
			return err
		}
	}
	return nil
}

// setClaudePID records the pid of a session's claude.
func (ss *sessions) setClaudePID(ctx context.Context, id string, pid int) error {
	s, err := ss.get(ctx, id)
	if err != nil {
		return err
	}
	rec, err := ss.ledger.UpdateSession(ctx, id, func(r *api.Session) { r.ClaudePID = pid })
	if err != nil {
		return err
	}
	ss.mu.Lock()
	s.rec = rec
	ss.mu.Unlock()
	return nil
}

// record is the session's record as it is now.
func (ss *sessions) record(s *gateSession) api.Session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return s.rec
}

// deferredCall is the call the session deferred, or "".
func (ss *sessions) deferredCall(s *gateSession) string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return s.rec.DeferredCall
}

// deferCall records that the session's run ends on this call's ask.
func (ss *sessions) deferCall(ctx context.Context, s *gateSession, toolUseID, claudeSession string) error {
	ok, err := ss.ledger.Defer(ctx, s.id, toolUseID, claudeSession)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("session %s deferred another call than %s", s.id, toolUseID)
	}
	return ss.refresh(ctx, s)
}

// refresh reads a cached session's record again.
func (ss *sessions) refresh(ctx context.Context, s *gateSession) error {
	rec, err := ss.ledger.Session(ctx, s.id)
	if err != nil {
		return err
	}
	ss.mu.Lock()
	s.rec = rec
	ss.mu.Unlock()
	return nil
}

// gatedPIDs are the processes of every session that has a process left,
// ended or not (each supervisor and each claude): nothing descending from
// them may decide an approval.
func (ss *sessions) gatedPIDs() map[int]bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	pids := map[int]bool{}
	for _, s := range ss.byID {
		if s.settings.SupervisorPID > 0 {
			pids[s.settings.SupervisorPID] = true
		}
		if s.rec.ClaudePID > 0 {
			pids[s.rec.ClaudePID] = true
		}
	}
	return pids
}

// gatedPIDsFor is gatedPIDs as it stands for the process pid itself: a
// supervisor whose every session has ended (toolgate resume, between the
// sessions it takes up one after another) is no longer gated, while what
// it started still is. A process that supervises a session not yet over,
// or that is a session's claude, stays gated.
func (ss *sessions) gatedPIDsFor(pid int) map[int]bool {
	pids := ss.gatedPIDs()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, s := range ss.byID {
		if s.rec.ClaudePID == pid || s.settings.SupervisorPID == pid && s.rec.EndedAt == nil {
			return pids
		}
	}
	// pid's parents are still checked: a supervisor that a gated session
	// started is gated through them.
	delete(pids, pid)
	return pids
}

// contained reports whether a session that runs contained has a process
// left: then a process with no_new_privs cannot be a person's.
func (ss *sessions) contained() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, s := range ss.byID {
		if s.settings.Contained && s.settings.alive(s.rec) {
			return true
		}
	}
	return false
}

// owns reports whether the process pid may end the session or name its
// claude: the toolgate run that registered it, or, for a session of an
// installed hook, a hook of the session's own claude.
func (ss *sessions) owns(s *gateSession, pid int) bool {
	if s.settings.Installed {
		claude := ss.record(s).ClaudePID
		return claude > 0 && claudeOf(pid, claude) == claude
	}
	return pid > 0 && pid == s.settings.OwnerPID
}

// guardFor is the guard of a session in project, with Claude Code's
// configuration in claudeDir (when the caller knows it) and extra paths.
func (ss *sessions) guardFor(project, claudeDir string, writable []string, extra ...string) *policy.Guard {
	gp := ss.guard
	gp.Project, gp.ClaudeDir, gp.Writable, gp.Extra = project, claudeDir, writable, extra
	return policy.NewGuard(gp)
}
