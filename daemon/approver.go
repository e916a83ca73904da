package daemon

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/proc"
	"github.com/toolgate/toolgate/ledger"
)

// approverHandler serves approve.sock: what people and their tools may do.
func (d *Daemon) approverHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(api.RouteStatus, d.handleStatus)
	mux.HandleFunc(api.RouteApprovals, d.handleApprovals)
	mux.HandleFunc(api.RouteApproval, d.handleApproval)
	mux.HandleFunc(api.RouteDecide, d.handleDecide)
	mux.HandleFunc(api.RouteWatch, d.handleWatch)
	mux.HandleFunc(api.RouteAuditVerify, d.handleAuditVerify)
	mux.HandleFunc(api.RouteAuditExport, d.handleAuditExport)
	mux.HandleFunc(api.RouteAuditEvent, d.handleAuditEvent)
	mux.HandleFunc(api.RouteAuditPrune, d.handleAuditPrune)
	mux.HandleFunc(api.RouteHistory, d.handleHistory)
	return d.guard(mux)
}

func (d *Daemon) handleApprovals(w http.ResponseWriter, r *http.Request) {
	pending, err := d.ledger.Pending(r.Context())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	out := api.ApprovalsResponse{Approvals: []api.ApprovalDetail{}}
	for _, a := range pending {
		out.Approvals = append(out.Approvals, d.gate.detail(r.Context(), a))
	}
	writeJSON(w, out)
}

func (d *Daemon) handleApproval(w http.ResponseWriter, r *http.Request) {
	a, err := d.ledger.Approval(r.Context(), r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, d.gate.detail(r.Context(), a))
}

// handleDecide records a person's decision. Who decides comes from the
// kernel (SO_PEERCRED), never from the request; the gated claude, anything
// descending from it or from its supervisor, and anything Claude Code
// started (its environment says so) is refused: the model never approves
// its own calls.
func (d *Daemon) handleDecide(w http.ResponseWriter, r *http.Request) {
	var req api.DecideRequest
	if !decodeRequest(w, r, &req) {
		return
	}
	if req.Decision != "approve" && req.Decision != "deny" {
		writeError(w, http.StatusBadRequest, "bad_request", `decision must be "approve" or "deny"`)
		return
	}
	if d.gate.fleet != nil {
		writeError(w, http.StatusConflict, "fleet", "this host's approvals are arbitrated by its fleet's Postgres: decide with "+
			"toolgate approve --fleet DSN (an approver's credentials), or on toolgate web --fleet")
		return
	}
	p, _ := peerFrom(r.Context())
	who := actorOf(p)
	for _, pid := range []int{p.PID, req.ViaPID} {
		if pid <= 0 {
			continue
		}
		if what, refusal := d.selfApproval(pid); refusal != "" {
			exe, _ := proc.Exe(pid)
			d.log.Warn("refused a decision from inside a gated session", "pid", pid, "exe", exe, "caller", p.PID, "approval", r.PathValue("id"), "why", refusal)
			d.incident(r.Context(), r.PathValue("id"), api.Incident{What: what, PID: pid, Exe: exe, Detail: req.Decision})
			writeError(w, http.StatusForbidden, "self_approval", refusal)
			return
		}
	}
	a, err := d.gate.resolve(r.Context(), r.PathValue("id"), req.Decision == "approve", who, req.Reason)
	var te *ledger.TerminalError
	switch {
	case errors.As(err, &te):
		code := "already_decided"
		if te.Approval.Status == api.StatusExpired && !te.Withdrawn() && !te.AnsweredInDialog() {
			code = "expired" // its time ran out; a withdrawn one was settled, as a decided one is
		}
		writeError(w, http.StatusConflict, code, describeRefusal(te))
		return
	case err != nil:
		d.fail(w, r, err)
		return
	}
	d.log.Info("approval decided", "approval", a.ID, "status", a.Status, "actor", who.Name, "pid", who.PID)
	writeJSON(w, d.gate.detail(r.Context(), a))
}

// selfApproval says why a decision from pid must be refused, with an
// incident code, or "".
func (d *Daemon) selfApproval(pid int) (what, why string) {
	return d.selfApprovalAmong(pid, d.sessions.gatedPIDs())
}

// selfApprovalAmong is selfApproval with gated as the processes whose
// descendants (themselves included) are gated.
func (d *Daemon) selfApprovalAmong(pid int, gated map[int]bool) (what, why string) {
	switch {
	case descendsFrom(pid, gated):
		return "self_approval", "a gated session cannot decide its own approvals; a person must, from outside the session"
	case startedByClaude(pid):
		return "self_approval", "a gated session cannot decide its own approvals: this process was started by Claude Code " +
			"(CLAUDECODE=1 is in its environment); a person must decide, from a terminal outside any Claude Code session"
	case noNewPrivs(pid) && d.sessions.contained():
		return "contained", "a contained session cannot decide approvals: this process runs with no_new_privs, as everything " +
			"toolgate run contains does; a person must decide, from a terminal outside any contained session"
	}
	return "", ""
}

// handleWatch streams JSON lines: a snapshot of what is pending, then an
// event per change.
func (d *Daemon) handleWatch(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "streaming is not supported")
		return
	}
	events, cancel := d.gate.broker.watch() // before the snapshot: nothing is missed
	defer cancel()
	pending, err := d.ledger.Pending(r.Context())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	snap := api.WatchEvent{Type: api.EventSnapshot, Time: time.Now().UTC(), Pending: []api.ApprovalDetail{}}
	for _, a := range pending {
		snap.Pending = append(snap.Pending, d.gate.detail(r.Context(), a))
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	enc.Encode(snap)
	flusher.Flush()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return // too slow: the client reconnects and gets a snapshot
			}
			if enc.Encode(ev) != nil {
				return
			}
			flusher.Flush()
		case <-r.Context().Done():
			return
		case <-d.gate.stopping:
			return // the approver reconnects to the next daemon
		}
	}
}

// handleWait holds a prompt until its approval is settled.
func (d *Daemon) handleWait(w http.ResponseWriter, r *http.Request) {
	v, err := d.gate.wait(r.Context(), r.PathValue("id"))
	if errors.Is(err, errStillPending) {
		return // the caller went away
	}
	if errors.Is(err, errStopping) {
		// No answer at all, only a closed connection: toolgate run takes
		// that for a daemon gone, starts one again and asks again for the
		// same tool_use_id, finding the same approval.
		panic(http.ErrAbortHandler)
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, v)
}

func (d *Daemon) handleClaudePID(w http.ResponseWriter, r *http.Request) {
	var req api.ClaudePIDRequest
	if !decodeRequest(w, r, &req) {
		return
	}
	if _, ok := d.ownedSession(w, r, "name its claude"); !ok {
		return
	}
	if err := d.sessions.setClaudePID(r.Context(), r.PathValue("id"), req.PID); err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, struct{}{})
}

// handleAuditVerify walks the audit chain; a broken chain is an answer,
// not a failure.
func (d *Daemon) handleAuditVerify(w http.ResponseWriter, r *http.Request) {
	res, err := d.ledger.Verify(r.Context())
	var broken *api.ChainError
	switch {
	case errors.As(err, &broken):
		res = api.VerifyResult{Broken: broken}
	case err != nil:
		d.fail(w, r, err)
		return
	}
	writeJSON(w, res)
}

// handleAuditExport streams the audit chain as JSON lines. A failure after
// the first line can only cut the stream short: the client's verify of
// the file then says where it ends.
func (d *Daemon) handleAuditExport(w http.ResponseWriter, r *http.Request) {
	p, _ := peerFrom(r.Context())
	who := actorOf(p)
	// An export is recorded in the chain, and a file cut back to an
	// earlier export's head verifies as that export: only a person's
	// exports may be made, so that none is the model's to cut back to.
	if what, refusal := d.selfApproval(p.PID); refusal != "" {
		d.incident(r.Context(), "audit", api.Incident{What: what, PID: p.PID, Exe: who.Exe, Detail: "audit export"})
		writeError(w, http.StatusForbidden, "self_approval", "a gated session cannot export the audit: "+refusal)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	if err := d.ledger.Export(r.Context(), w, api.Incident{PID: p.PID, Exe: who.Exe}); err != nil {
		d.log.Error("export the audit chain", "err", err)
		panic(http.ErrAbortHandler) // the client must not take a cut stream for the whole
	}
}

// handleAuditEvent answers one event of the audit chain, as stored: the
// record of an export that audit verify --file checks a file against.
func (d *Daemon) handleAuditEvent(w http.ResponseWriter, r *http.Request) {
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "an event's seq is a number")
		return
	}
	e, err := d.ledger.Event(r.Context(), seq)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, e)
}

// handleAuditPrune removes what is older than a date from the ledger. A
// process of a gated session is refused, as it would be as an approver:
// the model must not thin out its own record.
func (d *Daemon) handleAuditPrune(w http.ResponseWriter, r *http.Request) {
	var req api.PruneRequest
	if !decodeRequest(w, r, &req) {
		return
	}
	if req.Before.IsZero() {
		writeError(w, http.StatusBadRequest, "bad_request", "before is required")
		return
	}
	p, _ := peerFrom(r.Context())
	if what, refusal := d.selfApproval(p.PID); refusal != "" {
		exe, _ := proc.Exe(p.PID)
		d.log.Warn("refused a prune from inside a gated session", "pid", p.PID, "exe", exe, "why", refusal)
		d.incident(r.Context(), "audit", api.Incident{What: what, PID: p.PID, Exe: exe, Detail: "audit prune"})
		writeError(w, http.StatusForbidden, "self_approval", refusal)
		return
	}
	// In a fleet the chain is also the outbox: what Postgres lacks stays.
	published := ledger.Unpublished
	if d.gate.fleet != nil {
		var err error
		if published, err = d.gate.fleet.Published(r.Context()); err != nil {
			writeError(w, http.StatusServiceUnavailable, "fleet_unavailable",
				"the fleet's PostgreSQL cannot say which events it holds, and the ledger keeps those it lacks: "+err.Error())
			return
		}
	}
	who := actorOf(p)
	rec, err := d.ledger.Prune(r.Context(), req.Before, api.Incident{PID: p.PID, Exe: who.Exe}, published)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.log.Info("ledger pruned", "before", req.Before, "events", rec.Events, "sessions", rec.Sessions, "calls", rec.Calls, "base", rec.BaseSeq)
	writeJSON(w, rec)
}

// handleHistory streams the recorded calls of a time window, each after
// its session, for a replay (toolgate policy diff --history). As with the
// export, a failure after the first line cuts the stream short, and the
// client sees it cut.
func (d *Daemon) handleHistory(w http.ResponseWriter, r *http.Request) {
	var since, until time.Time
	for name, t := range map[string]*time.Time{"since": &since, "until": &until} {
		v := r.URL.Query().Get(name)
		if v == "" {
			continue
		}
		var err error
		if *t, err = time.Parse(time.RFC3339Nano, v); err != nil {
			writeError(w, http.StatusBadRequest, "bad_request", name+": want an RFC 3339 time, got "+strconv.Quote(v))
			return
		}
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	err := d.ledger.History(r.Context(), since, until, func(item api.HistoryItem) error { return enc.Encode(item) })
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		if r.Context().Err() == nil {
			d.log.Error("stream the history", "err", err)
		}
		panic(http.ErrAbortHandler) // the client must not take a cut stream for the whole
	}
}
