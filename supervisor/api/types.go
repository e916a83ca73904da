package api

import (
	"encoding/json"
	"time"
)

// Effects of a verdict.
const (
	Allow = "allow"
	Ask   = "ask"
	Deny  = "deny"
)

// Reason codes the gate itself gives (rules give their own).
const (
	ReasonDefault            = "default"
	ReasonSchemaInvalid      = "schema_invalid"
	ReasonApprovalExpired    = "approval_expired"
	ReasonUserDenied         = "user_denied"
	ReasonRequiresUser       = "requires_user_interaction"
	ReasonDuplicateToolUseID = "duplicate_tool_use_id"
	ReasonToolUseIDConflict  = "tool_use_id_conflict"
	ReasonGateUnavailable    = "gate_unavailable"
	ReasonNoApprover         = "no_approver"
	ReasonQueueFull          = "queue_full"
	ReasonUserApproved       = "user_approved"
	// ReasonHandedToClaude: in a session with toolgate install's hook,
	// nobody decided in toolgate before the hook had to answer, so Claude
	// Code's own permission dialog decides; toolgate wrote nothing back.
	ReasonHandedToClaude = "handed_to_claude"
)

// Sources of a verdict: who or what decided.
const (
	SourcePolicy    = "policy"
	SourceSchema    = "schema"
	SourcePerson    = "person"
	SourceExpiry    = "expiry"
	SourceDowngrade = "downgrade"
	SourceLedger    = "ledger"
	SourceGate      = "gate"
	SourceClaude    = "claude" // Claude Code's own permission dialog
)

// Error is the error envelope of every failed request.
type Error struct {
	Message string `json:"error"`
	Code    string `json:"code"`
}

// StatusResponse describes the running daemon.
type StatusResponse struct {
	Protocol int    `json:"protocol"`
	Version  string `json:"version"`
	PID      int    `json:"pid"`
	Ledger   string `json:"ledger"`
	Sessions int    `json:"sessions"` // active sessions
}

// ToolInfo is what an MCP server told about one of its tools.
type ToolInfo struct {
	Name                    string          `json:"name"` // mcp__server__tool
	InputSchema             json.RawMessage `json:"input_schema,omitempty"`
	RequiresUserInteraction bool            `json:"requires_user_interaction,omitempty"`
}

// RegisterRequest registers a gated session.
type RegisterRequest struct {
	Policy          json.RawMessage `json:"policy"` // the policy document, as read
	PolicyName      string          `json:"policy_name"`
	ApprovalTimeout Duration        `json:"approval_timeout"`
	OnAsk           string          `json:"on_ask"` // "wait" or "deny"
	Cwd             string          `json:"cwd"`
	Home            string          `json:"home"`
	SupervisorPID   int             `json:"supervisor_pid"`
	Tools           []ToolInfo      `json:"tools,omitempty"`
}

// Session is a registered session.
type Session struct {
	ID              string     `json:"id"`
	PolicySHA256    string     `json:"policy_sha256"`
	PolicyVersion   int        `json:"policy_version"`
	ClaudeSessionID string     `json:"claude_session_id,omitempty"`
	ClaudePID       int        `json:"claude_pid,omitempty"`
	Cwd             string     `json:"cwd"`
	StartedAt       time.Time  `json:"started_at"`
	EndedAt         *time.Time `json:"ended_at,omitempty"`
}

// HookRequest forwards one Claude Code hook event, raw, with the session
// it belongs to: toolgate run's (SessionID), or, for a hook installed in
// Claude Code's settings (Installed), Claude Code's own session_id from the
// event.
type HookRequest struct {
	SessionID string          `json:"session_id,omitempty"`
	Event     json.RawMessage `json:"event"`
	Installed *InstalledHook  `json:"installed,omitempty"`
}

// InstalledHook is what a hook installed by toolgate install tells the
// daemon about its session, which the daemon registers on its first event.
// ClaudePID is believed only when it is an ancestor of the calling hook
// (the daemon checks it against the kernel's peer credentials).
type InstalledHook struct {
	PolicyPath      string   `json:"policy_path"`
	ApprovalTimeout Duration `json:"approval_timeout"` // how long a PermissionRequest waits for a person
	ClaudePID       int      `json:"claude_pid,omitempty"`
	Home            string   `json:"home,omitempty"`
}

// Verdict is the gate's answer on one call, for the hook and the prompt
// tool alike. Message is the text for the model on a deny.
type Verdict struct {
	Effect     string          `json:"effect"`
	RuleID     string          `json:"rule_id,omitempty"`
	ReasonCode string          `json:"reason_code,omitempty"`
	Source     string          `json:"source,omitempty"`
	ApprovalID string          `json:"approval_id,omitempty"`
	Message    string          `json:"message,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`      // on allow from the prompt: the input to run
	ExpiresAt  *time.Time      `json:"expires_at,omitempty"` // on ask: when the approval expires
}

// HookResponse answers a hook event. Verdict is nil for events that need no
// answer (PostToolUse and the like).
type HookResponse struct {
	Verdict *Verdict `json:"verdict,omitempty"`
}

// PromptRequest is one permission_prompt call.
type PromptRequest struct {
	SessionID string          `json:"session_id"`
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	Input     json.RawMessage `json:"input"`
}

// Call is one tool call as the ledger knows it, with what came of it.
type Call struct {
	ToolUseID  string          `json:"tool_use_id"`
	SessionID  string          `json:"session_id"`
	ToolName   string          `json:"tool_name"`
	Input      json.RawMessage `json:"input"`
	ProposedAt time.Time       `json:"proposed_at"`
	Effect     string          `json:"effect,omitempty"` // "" while undecided
	RuleID     string          `json:"rule_id,omitempty"`
	ReasonCode string          `json:"reason_code,omitempty"`
	Source     string          `json:"source,omitempty"`
	Actor      string          `json:"actor,omitempty"`
	ApprovalID string          `json:"approval_id,omitempty"`
	DecidedAt  *time.Time      `json:"decided_at,omitempty"`
	Executed   bool            `json:"executed"`
	Failed     bool            `json:"failed,omitempty"`
	Executions int             `json:"executions"`
	Seen       string          `json:"seen,omitempty"` // what the model saw, in short
	Repeats    []Repeat        `json:"repeats,omitempty"`
}

// Repeat is a later proposal of the same tool_use_id and its answer.
type Repeat struct {
	ProposedAt time.Time `json:"proposed_at"`
	SessionID  string    `json:"session_id"`
	Effect     string    `json:"effect"`
	ReasonCode string    `json:"reason_code,omitempty"`
}

// CallsResponse lists calls.
type CallsResponse struct {
	Calls []Call `json:"calls"`
}

// Duration is a time.Duration that travels as a string ("15m").
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}
