package policy

import (
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate/api"
)

// Replayer decides recorded calls with two policies, each as the gate
// decided them (Session.Evaluate): with the call's session's working
// directory and home, and the input schemas and requiresUserInteraction
// flags its MCP servers published (toolgate run records them with the
// session), so that schema_invalid and requires_user_interaction replay as
// they happened. A call whose session it was not told about is decided
// with the policies' own schemas, in the home and directory of no one:
// its report entry says so (WithoutSession). It is not safe for
// concurrent use.
type Replayer struct {
	Old, New *Policy

	known   map[string]api.HistorySession
	decider map[string][2]*Session // by session id: old, new
	nobody  [2]*Session
	report  HistoryReport
	groups  map[[2]api.Effect]*ChangeGroup
}

// NewReplayer returns a replayer of old against new.
func NewReplayer(old, new *Policy) *Replayer {
	return &Replayer{Old: old, New: new, known: map[string]api.HistorySession{}, decider: map[string][2]*Session{},
		nobody: [2]*Session{NewSession(old, nil, "", ""), NewSession(new, nil, "", "")}, groups: map[[2]api.Effect]*ChangeGroup{}}
}

// AddSession tells the replayer what the gate knew of a session.
func (r *Replayer) AddSession(s api.HistorySession) { r.known[s.ID] = s }

// sessions returns the deciders of a session, the policies' own without it.
func (r *Replayer) sessions(id string) ([2]*Session, bool) {
	if d, ok := r.decider[id]; ok {
		return d, true
	}
	s, ok := r.known[id]
	if !ok {
		return r.nobody, false
	}
	d := [2]*Session{NewSession(r.Old, s.Tools, s.Cwd, s.Home), NewSession(r.New, s.Tools, s.Cwd, s.Home)}
	r.decider[id] = d
	return d, true
}

// Outcome is what a policy decides for a call: rule_id is null when the
// default decided.
type Outcome struct {
	Effect     api.Effect `json:"effect"`
	RuleID     *string    `json:"rule_id"`
	ReasonCode string     `json:"reason_code,omitempty"`
}

func outcomeOf(v api.Verdict) Outcome {
	o := Outcome{Effect: v.Effect, ReasonCode: v.ReasonCode}
	if v.RuleID != "" {
		o.RuleID = &v.RuleID
	}
	return o
}

// ChangedCall is a recorded call whose decision the new policy changes.
type ChangedCall struct {
	ToolUseID      string          `json:"tool_use_id"`
	SessionID      string          `json:"session_id"`
	ToolName       string          `json:"tool_name"`
	Input          json.RawMessage `json:"input"`
	ProposedAt     time.Time       `json:"proposed_at"`
	Old            Outcome         `json:"old"`
	New            Outcome         `json:"new"`
	WithoutSession bool            `json:"without_session,omitempty"`
}

// Replay decides one recorded call with both policies and counts it in
// the report: a call whose effect changes is listed in its change's group.
func (r *Replayer) Replay(c api.Call) {
	d, known := r.sessions(c.SessionID)
	oldV, newV := d[0].In(c.Cwd).Evaluate(c.ToolName, c.Input), d[1].In(c.Cwd).Evaluate(c.ToolName, c.Input)
	r.report.Calls++
	if !known {
		r.report.WithoutSession++
	}
	if oldV.Effect == newV.Effect {
		if oldV.RuleID != newV.RuleID || oldV.ReasonCode != newV.ReasonCode {
			r.report.OtherRule++
		}
		return
	}
	g := r.group(oldV.Effect, newV.Effect)
	cc := ChangedCall{ToolUseID: c.ToolUseID, SessionID: c.SessionID, ToolName: c.ToolName, Input: c.Input,
		ProposedAt: c.ProposedAt, Old: outcomeOf(oldV), New: outcomeOf(newV), WithoutSession: !known}
	g.Calls = append(g.Calls, cc)
	g.count(cc.Old, cc.New)
}
