package api

import (
	"encoding/json"
	"time"
)

// The documents below are what the ledger stores, what the daemon answers
// and what the CLI prints: one type each, from the hook's event to the
// audit.

// Verdict is what was decided on one call and by whom: the gate's answer to
// the hook and the prompt tool, and the decision the ledger keeps with the
// call. Message is the text for the model on a deny.
type Verdict struct {
	Effect     Effect     `json:"effect,omitempty"` // "" while undecided
	RuleID     string     `json:"rule_id,omitempty"`
	ReasonCode string     `json:"reason_code,omitempty"`
	Source     string     `json:"source,omitempty"`
	Actor      string     `json:"actor,omitempty"` // a person's decision: who, from peer credentials
	ApprovalID string     `json:"approval_id,omitempty"`
	DecidedAt  *time.Time `json:"decided_at,omitempty"`
	Message    string     `json:"message,omitempty"`
	// ApprovalTimeout is, on an ask, how long the asking rule lets it wait
	// for a person; the session's own timeout when 0.
	ApprovalTimeout Duration `json:"approval_timeout,omitempty"`
	// On the wire only, never stored with a call:
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"` // on allow from the prompt: the input to run
	ExpiresAt    *time.Time      `json:"expires_at,omitempty"`    // on ask: when the approval expires
}

// Deny is a deny verdict with its reason_code, its source and the message
// the model reads.
func Deny(reason, source string) Verdict {
	v := Verdict{Effect: EffectDeny, ReasonCode: reason, Source: source}
	v.Message = DenyMessage(v, "")
	return v
}

// Call is one tool_use_id: what was proposed, what was decided (the
// embedded Verdict, whose Effect is "" while undecided) and what ran. The
// ledger stores it as it is; audit and the run report list it.
type Call struct {
	ToolUseID   string          `json:"tool_use_id"`
	SessionID   string          `json:"session_id"`
	AgentID     string          `json:"agent_id,omitempty"`
	ToolName    string          `json:"tool_name"`
	Input       json.RawMessage `json:"input"` // exactly as submitted
	InputSHA256 string          `json:"input_sha256,omitempty"`
	// Deferred: the call's ask ended the run (--on-ask defer); a person
	// decides it, and toolgate resume proposes it again.
	Deferred bool `json:"deferred,omitempty"`
	// Cwd is the directory the call runs in, as Claude Code reported it
	// with the call (its Bash tool keeps a cd from call to call): relative
	// paths in the input resolve against it. Empty: the session's.
	Cwd        string    `json:"cwd,omitempty"`
	ProposedAt time.Time `json:"proposed_at"`
	Verdict
	Executed   bool       `json:"executed"` // it ran (or ran and failed)
	Failed     bool       `json:"failed,omitempty"`
	ExecutedAt *time.Time `json:"executed_at,omitempty"`
	Outcome    string     `json:"outcome,omitempty"` // what the execution reported, in short
	Seen       string     `json:"seen,omitempty"`    // what the model saw of the call, in short
	Executions int        `json:"executions"`        // attempts to record an execution; more than 1 is a duplicate
	Repeats    []Repeat   `json:"repeats,omitempty"` // later proposals of the same tool_use_id
	// TranscriptEntries are the claude transcript entries (uuids) whose
	// outcomes of the call were recorded, in order.
	TranscriptEntries []string `json:"transcript_entries,omitempty"`
	// Repeat marks, in a run's report, an entry for a later proposal of a
	// tool_use_id (the model sent it again) and the answer it got.
	Repeat bool `json:"repeat,omitempty"`
}

// Repeat is a later proposal of a tool_use_id and the answer it got.
type Repeat struct {
	ProposedAt time.Time `json:"proposed_at"`
	SessionID  string    `json:"session_id"` // the session it came from, which may be another
	Effect     Effect    `json:"effect"`
	ReasonCode string    `json:"reason_code,omitempty"`
	// Resume: the proposal of a deferred call by its session's resume,
	// which a person's decision answered; not the model's repeat.
	Resume bool `json:"resume,omitempty"`
}

// Approval is the approval record, exactly the approval flow's schema.
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

// Decision is a decision on an approval (a person's, or the expiry's),
// kept as its own document beside the record, never overwriting it. Its
// decision is the approval flow's: the effect it gives the call, allow or
// deny (an expiry is a deny with reason_code approval_expired; the
// record's status says expired). It is ask only when nobody decided in toolgate and Claude
// Code's own dialog decides (reason_code handed_to_claude). Decisions
// stored before protocol 4 said approved, denied or expired; the ledger
// reads them as these.
type Decision struct {
	ApprovalID string    `json:"approval_id"`
	ToolUseID  string    `json:"tool_use_id"`
	Decision   Effect    `json:"decision"`
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

// WriteBack is what the gate answered the CLI for a call. As in the
// approval flow, rule_id and reason_code are always there: null when the
// default decided, or when an allow rule has no reason_code.
type WriteBack struct {
	ToolUseID  string `json:"tool_use_id"`
	Effect     Effect `json:"effect"`
	RuleID     string `json:"rule_id"`
	ReasonCode string `json:"reason_code"`
	WroteBack  bool   `json:"wrote_back"`
}

// MarshalJSON writes an empty rule_id or reason_code as null; null reads
// back as "".
func (w WriteBack) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		ToolUseID  string  `json:"tool_use_id"`
		Effect     Effect  `json:"effect"`
		RuleID     *string `json:"rule_id"`
		ReasonCode *string `json:"reason_code"`
		WroteBack  bool    `json:"wrote_back"`
	}{w.ToolUseID, w.Effect, orNull(w.RuleID), orNull(w.ReasonCode), w.WroteBack})
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// WriteBackOf is the write-back of a verdict: an ask means nothing was
// written back (Claude Code's own dialog decides).
func WriteBackOf(toolUseID string, v Verdict) WriteBack {
	return WriteBack{ToolUseID: toolUseID, Effect: v.Effect, RuleID: v.RuleID, ReasonCode: v.ReasonCode,
		WroteBack: v.Effect != EffectAsk}
}

// Session is one gated claude session.
type Session struct {
	ID              string     `json:"id"`
	PolicySHA256    string     `json:"policy_sha256"`
	PolicyVersion   int        `json:"policy_version"`
	ClaudeSessionID string     `json:"claude_session_id,omitempty"`
	ClaudePID       int        `json:"claude_pid,omitempty"`
	Cwd             string     `json:"cwd,omitempty"`
	StartedAt       time.Time  `json:"started_at"`
	EndedAt         *time.Time `json:"ended_at,omitempty"`
	EndReason       string     `json:"end_reason,omitempty"` // EndEnded, EndAbandoned or EndDeferred
	// DeferredCall is the call the session waits on while it is ended
	// EndDeferred: a person decides its approval, then toolgate resume
	// runs claude on. ResumedAt is the last resume.
	DeferredCall string     `json:"deferred_call,omitempty"`
	ResumedAt    *time.Time `json:"resumed_at,omitempty"`
	// Settings is the gate's own configuration of the session (timeouts,
	// discovered tool schemas ...), kept so that a restarted daemon can go
	// on gating it.
	Settings json.RawMessage `json:"settings,omitempty"`
}

// Why a session ended.
const (
	EndEnded     = "ended"     // its supervisor (or Claude Code, for an installed hook) ended it
	EndAbandoned = "abandoned" // its processes were gone: the daemon ended it
	EndDeferred  = "deferred"  // it deferred a call for a person (--on-ask defer): toolgate resume goes on
	// EndInterrupted: its supervisor was stopped (Ctrl-C, SIGTERM) and
	// ended it; what still waited for a person is withdrawn.
	EndInterrupted = "interrupted"
)

// Incident is something the daemon refused because it could only be an
// attack on the gate or a mistake, kept in the audit: a process ending a
// session it does not own, deciding an approval from inside a gated
// session, and the like. Who did it comes from the kernel.
type Incident struct {
	What   string `json:"what"` // a reason code: not_owner, self_approval, contained ...
	PID    int    `json:"pid"`
	Exe    string `json:"exe,omitempty"`
	Detail string `json:"detail,omitempty"`
}
