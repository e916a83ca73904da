package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/ledger"
)

// Deferred sessions (toolgate run --on-ask defer): a run that asks ends at
// once, its session ended "deferred" with the approval still pending, for
// a person to decide at leisure; toolgate resume then takes the session up
// again, once, and runs claude on from where it stopped.

// handleDeferred lists the sessions waiting on a deferred call, with their
// approval as it stands.
func (d *Daemon) handleDeferred(w http.ResponseWriter, r *http.Request) {
	all, err := d.ledger.Sessions(r.Context())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	out := api.DeferredResponse{Sessions: []api.DeferredSession{}}
	for _, rec := range all {
		if rec.EndReason != api.EndDeferred {
			continue
		}
		a, err := d.ledger.ApprovalFor(r.Context(), rec.DeferredCall)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		var st sessionSettings
		json.Unmarshal(rec.Settings, &st)
		out.Sessions = append(out.Sessions, api.DeferredSession{Session: public(rec), Approval: a, PolicyName: st.PolicyName,
			Claude: st.Claude, ClaudeArgs: st.ClaudeArgs, OnAsk: st.OnAsk, ApprovalTimeout: st.ApprovalTimeout})
	}
	writeJSON(w, out)
}

// handleResume takes up a deferred session again for its caller, which
// becomes its supervisor and owner. Nothing a gated session runs may: it
// would own a session whose ask waits on a person.
func (d *Daemon) handleResume(w http.ResponseWriter, r *http.Request) {
	var req api.ResumeRequest
	if !decodeRequest(w, r, &req) {
		return
	}
	p, _ := peerFrom(r.Context())
	// The caller may be a resume whose earlier session ended: it takes up
	// the next one.
	if what, refusal := d.selfApprovalAmong(p.PID, d.sessions.gatedPIDsFor(p.PID)); refusal != "" {
		d.incident(r.Context(), r.PathValue("id"), api.Incident{What: what, PID: p.PID, Exe: actorOf(p).Exe, Detail: "resume"})
		writeError(w, http.StatusForbidden, "self_approval", "a gated session cannot resume a session: "+refusal)
		return
	}
	rec, err := d.sessions.resume(r.Context(), r.PathValue("id"), p.PID, req)
	switch {
	case errors.Is(err, ledger.ErrNotDeferred):
		writeError(w, http.StatusConflict, "not_deferred", err.Error())
		return
	case err != nil:
		d.fail(w, r, err)
		return
	}
	d.log.Info("session resumed", "session", rec.ID, "pid", p.PID)
	writeJSON(w, public(rec))
}

// resume records the resume of a deferred session by owner (its new
// supervisor), and caches the session as it now is.
func (ss *sessions) resume(ctx context.Context, id string, owner int, req api.ResumeRequest) (api.Session, error) {
	var settings sessionSettings
	rec, err := ss.ledger.ResumeSession(ctx, id, func(s *api.Session) {
		json.Unmarshal(s.Settings, &settings)
		settings.SupervisorPID, settings.OwnerPID, settings.Contained = owner, owner, req.Contained
		settings.Guard = ss.guardFor(s.Cwd, "", req.Writable, req.Protected...)
		s.Settings, _ = json.Marshal(settings)
	})
	if err != nil {
		return api.Session{}, err
	}
	doc, err := ss.ledger.Policy(ctx, rec.PolicySHA256)
	if err != nil {
		return api.Session{}, err
	}
	s, err := parseGateSession(rec, settings, doc)
	if err != nil {
		return api.Session{}, err
	}
	ss.mu.Lock()
	ss.byID[id] = s
	ss.mu.Unlock()
	return rec, nil
}
