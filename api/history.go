package api

import (
	"encoding/json"
	"time"
)

// RouteHistory streams the recorded calls for a replay (toolgate policy
// diff --history), on approve.sock: the calls proposed in a time window,
// as proposed (how each was decided, and what ran, is in the audit), each
// preceded once by what the gate knew of its session.
const RouteHistory = "GET /v1/history"

// HistoryItem is one line of GET /v1/history: a session or a call. A
// session comes before the first call of it; a call whose session the
// ledger does not know comes without one.
type HistoryItem struct {
	Session *HistorySession `json:"session,omitempty"`
	Call    *Call           `json:"call,omitempty"`
}

// HistorySession is what the gate knew of a session when it decided its
// calls: where it ran and what its MCP servers published about their
// tools (input schemas, requiresUserInteraction), so that a replay decides
// each call as the gate did.
type HistorySession struct {
	ID            string     `json:"id"`
	PolicySHA256  string     `json:"policy_sha256"`
	PolicyVersion int        `json:"policy_version"`
	Cwd           string     `json:"cwd,omitempty"`
	Home          string     `json:"home,omitempty"`
	Tools         []ToolInfo `json:"tools,omitempty"`
}

// SessionContext is the part of a session's Settings that its decisions
// depend on. The daemon keeps more there; it writes these members under
// these names.
type SessionContext struct {
	Home  string     `json:"home"`
	Tools []ToolInfo `json:"tools,omitempty"`
}

// HistorySessionOf is what a session record says the gate knew of it.
func HistorySessionOf(s Session) HistorySession {
	var sc SessionContext
	json.Unmarshal(s.Settings, &sc) // no settings: no home, no tools
	return HistorySession{ID: s.ID, PolicySHA256: s.PolicySHA256, PolicyVersion: s.PolicyVersion, Cwd: s.Cwd,
		Home: sc.Home, Tools: sc.Tools}
}

// InWindow reports whether t lies in [since, until); a zero bound is no
// bound.
func InWindow(t, since, until time.Time) bool {
	return (since.IsZero() || !t.Before(since)) && (until.IsZero() || t.Before(until))
}
