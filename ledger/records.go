package ledger

import (
	"encoding/json"
	"time"
)

// Session is one gated claude session.
type Session struct {
	ID              string     `json:"id"`
	PolicySHA256    string     `json:"policy_sha256"`
	PolicyVersion   int        `json:"policy_version"`
	ClaudeSessionID string     `json:"claude_session_id,omitempty"`
	Cwd             string     `json:"cwd,omitempty"`
	ClaudePID       int        `json:"claude_pid,omitempty"`
	StartedAt       time.Time  `json:"started_at"`
	EndedAt         *time.Time `json:"ended_at,omitempty"`
	// Settings is the gate's own configuration of the session (timeouts,
	// discovered tool schemas ...), kept so that a restarted daemon can
	// go on gating it. The ledger does not interpret it.
	Settings json.RawMessage `json:"settings,omitempty"`
}

// Effect values of decisions and write-backs.
const (
	EffectAllow = "allow"
	EffectAsk   = "ask"
	EffectDeny  = "deny"
)

// CallDecision is the decision that applied to a call, and who made it.
type CallDecision struct {
	Effect     string    `json:"effect"`
	RuleID     string    `json:"rule_id,omitempty"`
	ReasonCode string    `json:"reason_code,omitempty"`
	Source     string    `json:"source"` // policy, schema, person, expiry, ledger, gate ...
	Actor      string    `json:"actor,omitempty"`
	ApprovalID string    `json:"approval_id,omitempty"`
	DecidedAt  time.Time `json:"decided_at"`
}

// Terminal reports whether the decision is final (allow or deny).
func (d *CallDecision) Terminal() bool {
	return d != nil && (d.Effect == EffectAllow || d.Effect == EffectDeny)
}

// Call is one tool_use_id: what was proposed, what was decided, what ran.
type Call struct {
	ToolUseID   string          `json:"tool_use_id"`
	SessionID   string          `json:"session_id"`
	AgentID     string          `json:"agent_id,omitempty"`
	ToolName    string          `json:"tool_name"`
	Input       json.RawMessage `json:"input"`
	InputSHA256 string          `json:"input_sha256"`
	ProposedAt  time.Time       `json:"proposed_at"`
	DecidedAt   *time.Time      `json:"decided_at,omitempty"`
	ExecutedAt  *time.Time      `json:"executed_at,omitempty"`
	FailedAt    *time.Time      `json:"failed_at,omitempty"`
	Decision    *CallDecision   `json:"decision,omitempty"`
	Outcome     string          `json:"outcome,omitempty"` // what the execution reported, in short
	Seen        string          `json:"seen,omitempty"`    // what the model saw of the call, in short
	Executions  int             `json:"executions"`        // attempts to record an execution; more than 1 is a duplicate
	Repeats     []Repeat        `json:"repeats,omitempty"` // later proposals of the same tool_use_id and their answers
}

// Repeat is a later proposal of a tool_use_id (the model sent it again) and
// the answer it got.
type Repeat struct {
	ProposedAt time.Time `json:"proposed_at"`
	SessionID  string    `json:"session_id"` // the session it came from, which may be another
	Effect     string    `json:"effect"`
	ReasonCode string    `json:"reason_code,omitempty"`
}

// Approval statuses. A record moves only from pending to one of the others.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusDenied   = "denied"
	StatusExpired  = "expired"
)

// Approval is the approval record, exactly the seed's schema.
type Approval struct {
	ID            string          `json:"id"`
	SessionID     string          `json:"session_id"`
	ToolUseID     string          `json:"tool_use_id"`
	ToolName      string          `json:"tool_name"`
	Input         json.RawMessage `json:"input"`
	MatchedRule   *string         `json:"matched_rule"`
	PolicyVersion int             `json:"policy_version"`
	Status        string          `json:"status"`
	CreatedAt     time.Time       `json:"created_at"`
	ExpiresAt     time.Time       `json:"expires_at"`
}

// Decision is a person's (or the expiry's) decision on an approval, stored
// as its own document beside the record.
type Decision struct {
	ApprovalID string    `json:"approval_id"`
	ToolUseID  string    `json:"tool_use_id"`
	Decision   string    `json:"decision"` // approved, denied or expired
	Actor      string    `json:"actor"`
	ReasonCode string    `json:"reason_code"`
	DecidedAt  time.Time `json:"decided_at"`
	// Who decided, beyond the actor: the deciding process, from the
	// kernel's peer credentials, never from what the caller sent.
	ActorPID int    `json:"actor_pid,omitempty"`
	ActorExe string `json:"actor_exe,omitempty"`
	// Note is the person's own words (--reason). It is kept for the
	// audit and never shown to the model.
	Note string `json:"note,omitempty"`
}

// ActorExpiry is the actor of a decision made by expiry.
const ActorExpiry = "system:expiry"

// ReasonApprovalExpired is the reason_code of an expired approval.
const ReasonApprovalExpired = "approval_expired"

// ReasonHandedToClaude is the reason_code of a hand-off approval that ended
// without a decision in toolgate: Claude Code's own dialog decides the call.
const ReasonHandedToClaude = "handed_to_claude"

// SourceClaude is the source of a call decision left to Claude Code's own
// permission dialog.
const SourceClaude = "claude"

// WriteBack is what the gate answered the CLI for a call.
type WriteBack struct {
	ToolUseID  string `json:"tool_use_id"`
	Effect     string `json:"effect"`
	RuleID     string `json:"rule_id,omitempty"`
	ReasonCode string `json:"reason_code,omitempty"`
	WroteBack  bool   `json:"wrote_back"`
}

// Event is one entry of the audit chain: every state change, in order.
type Event struct {
	Seq      uint64          `json:"seq"`
	Time     time.Time       `json:"time"`
	Kind     string          `json:"kind"`
	Subject  string          `json:"subject"` // the id the event is about
	Data     json.RawMessage `json:"data"`    // the document as written
	PrevHash string          `json:"prev_hash"`
	Hash     string          `json:"hash"`
}

// Event kinds.
const (
	KindSessionStarted     = "session_started"
	KindSessionUpdated     = "session_updated"
	KindCallProposed       = "call_proposed"
	KindCallConflict       = "call_conflict"
	KindCallDecided        = "call_decided"
	KindApprovalCreated    = "approval_created"
	KindApprovalDecided    = "approval_decided"
	KindWriteBack          = "write_back"
	KindCallExecuted       = "call_executed"
	KindCallFailed         = "call_failed"
	KindExecutionDuplicate = "execution_duplicate"
	KindCallSeen           = "call_seen"
	KindCallRepeated       = "call_repeated"
	KindPolicyStored       = "policy_stored"
)
