package api

import (
	"encoding/json"
	"fmt"
	"time"
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
	// Added within protocol 4 (2026-12-02); older daemons leave them out.
	RuntimeDir string    `json:"runtime_dir,omitempty"` // where its sockets are
	StartedAt  time.Time `json:"started_at,omitzero"`
	Pending    int       `json:"pending"` // asks waiting for a person
	// Fleet says that the daemon's approvals are arbitrated by a fleet's
	// PostgreSQL: people decide them with --fleet, not on approve.sock.
	Fleet bool `json:"fleet,omitempty"`
	// Broken says why the daemon can no longer serve (its ledger's
	// directory removed, say): it is stopping, and denies every call.
	// Added within protocol 4 (2026-12-05).
	Broken string `json:"broken,omitempty"`
}

// ToolInfo is what an MCP server told about one of its tools.
type ToolInfo struct {
	Name                    string          `json:"name"` // mcp__server__tool
	InputSchema             json.RawMessage `json:"input_schema,omitempty"`
	RequiresUserInteraction bool            `json:"requires_user_interaction,omitempty"`
}

// RegisterRequest registers a gated session.
type RegisterRequest struct {
	// Policy is the policy document, byte for byte as read (base64 on the
	// wire: a JSON value would be compacted, and its sha256 would not be
	// the file's).
	Policy          []byte     `json:"policy"`
	PolicyName      string     `json:"policy_name"`
	ApprovalTimeout Duration   `json:"approval_timeout"`
	OnAsk           string     `json:"on_ask"` // "wait" or "deny"
	Cwd             string     `json:"cwd"`
	Home            string     `json:"home"`
	SupervisorPID   int        `json:"supervisor_pid"` // the caller when 0
	Tools           []ToolInfo `json:"tools,omitempty"`
	// Contained says that the session's claude runs in a Landlock domain
	// (every process it starts carries no_new_privs).
	Contained bool `json:"contained,omitempty"`
	// Protected are paths the session's tools must not touch, beside the
	// daemon's own (the guard): the policy, Claude Code's configuration,
	// the files toolgate run gives claude, the hook.
	Protected []string `json:"protected,omitempty"`
	// Writable, when set, are the only trees Claude Code's file tools may
	// write in: those the session's Bash commands may (its boundary).
	Writable []string `json:"writable,omitempty"`
	// Claude and ClaudeArgs are the claude executable and the user's
	// arguments, kept for toolgate resume (OnAsk defer).
	Claude     string   `json:"claude,omitempty"`
	ClaudeArgs []string `json:"claude_args,omitempty"`
}

// ResumeRequest takes up a deferred session again: its caller (toolgate
// resume) becomes its supervisor and owner.
type ResumeRequest struct {
	Contained bool     `json:"contained,omitempty"`
	Protected []string `json:"protected,omitempty"`
	Writable  []string `json:"writable,omitempty"`
}

// DeferredSession is a session that deferred a call for a person, with
// what toolgate resume needs to run claude on.
type DeferredSession struct {
	Session    Session  `json:"session"`
	Approval   Approval `json:"approval"`
	PolicyName string   `json:"policy_name"`
	Claude     string   `json:"claude"`
	ClaudeArgs []string `json:"claude_args"`
	OnAsk      string   `json:"on_ask"`
	// ApprovalTimeout is the session's, for the asks of the resumed run.
	ApprovalTimeout Duration `json:"approval_timeout"`
}

// DeferredResponse lists the deferred sessions.
type DeferredResponse struct {
	Sessions []DeferredSession `json:"sessions"`
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
	ClaudeDir       string   `json:"claude_dir,omitempty"` // Claude Code's configuration: $CLAUDE_CONFIG_DIR or ~/.claude
}

// HookResponse answers a hook event. Verdict is nil for events that need no
// answer (PostToolUse and the like).
type HookResponse struct {
	Verdict *Verdict `json:"verdict,omitempty"`
	// Defer: the verdict is an ask the session defers (OnAskDefer): the
	// hook answers PreToolUse with "defer", and the run ends.
	Defer bool `json:"defer,omitempty"`
}

// OutcomesRequest reports what became of calls of a session once they
// were decided, as toolgate run reads it from Claude Code's transcript
// (POST /v1/sessions/{id}/outcomes, only from the session's owner).
type OutcomesRequest struct {
	Outcomes []Outcome `json:"outcomes"`
}

// OutcomesResponse names the calls that ran without ever being proposed
// to the gate: Claude Code's hook did not reach it.
type OutcomesResponse struct {
	Undecided []string `json:"undecided,omitempty"`
}

// Outcome is what became of one call: whether Claude Code ran it, and the
// tool_result the model saw. ToolName and Input come with it so that a
// call the gate never saw proposed is recorded all the same.
type Outcome struct {
	ToolUseID string          `json:"tool_use_id"`
	ToolName  string          `json:"tool_name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Ran       bool            `json:"ran"`               // Claude Code's permission flow let it run
	Failed    bool            `json:"failed,omitempty"`  // it ran and failed
	Outcome   string          `json:"outcome,omitempty"` // "ok", or the error, in short
	Seen      string          `json:"seen"`              // the tool_result's text
	// Entry identifies where the outcome was read (the uuid of claude's
	// transcript entry): an outcome sent again with the same Entry (a
	// retry after an answer was lost) is recorded once.
	Entry string `json:"entry,omitempty"`
}

// PromptRequest is one permission_prompt call.
type PromptRequest struct {
	SessionID string          `json:"session_id"`
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	Input     json.RawMessage `json:"input"`
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

// VerifyResult is what a walk of the audit chain found: how many events it
// holds and the hash of the last, or the first broken link. For an export,
// Export says which export it is, once the ledger confirms it.
// ChainHead is an event of the audit chain by its sequence number and
// hash: kept where the model cannot write (a run's report), it anchors
// every export made later, which must hold that event with that hash.
type ChainHead struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// EndSessionRequest says why a supervisor ends its session: EndEnded
// (also when it is empty) or EndInterrupted.
type EndSessionRequest struct {
	Reason string `json:"reason,omitempty"`
}

// EndedSession is a session as its end left it, with the audit chain's
// head once everything of it was recorded.
type EndedSession struct {
	Session
	AuditHead *ChainHead `json:"audit_head,omitempty"`
}

type VerifyResult struct {
	Valid   bool   `json:"valid"`
	Events  uint64 `json:"events"`             // how many the chain holds (after Base)
	HeadSeq uint64 `json:"head_seq,omitempty"` // the seq of the last event
	Head    string `json:"head,omitempty"`     // the hash of the last event
	// Base is the seq of the last event pruned (audit prune), and BaseHash
	// its hash: the chain holds the events after it, the first naming it.
	Base     uint64      `json:"base,omitempty"`
	BaseHash string      `json:"base_hash,omitempty"`
	Broken   *ChainError `json:"broken,omitempty"`
	Export   *Exported   `json:"export,omitempty"`
}

// Exported is an export of the audit chain, as the ledger records it (an
// "audit_exported" event) and as the export's last line repeats it: the
// events it holds end at HeadSeq with HeadHash. It anchors an export: a
// file cut short or rewritten no longer matches the ledger's record.
type Exported struct {
	Event    uint64 `json:"event"` // the seq of the ledger's audit_exported event
	HeadSeq  uint64 `json:"head_seq"`
	HeadHash string `json:"head_hash"`
	// BaseSeq and BaseHash are the last event pruned (audit prune) when
	// the chain was pruned: the export holds the events after it.
	BaseSeq    uint64    `json:"base_seq,omitempty"`
	BaseHash   string    `json:"base_hash,omitempty"`
	ExportedAt time.Time `json:"exported_at"`
	ByPID      int       `json:"by_pid,omitempty"`
	ByExe      string    `json:"by_exe,omitempty"`
}

// PruneRequest asks the daemon to remove what is older than Before.
type PruneRequest struct {
	Before time.Time `json:"before"`
}

// Pruned is a prune of the ledger, as the audit chain records it (an
// "audit_pruned" event) and as audit prune reports it: the events recorded
// before Before and the sessions ended before it, with their calls, were
// removed; the chain goes on from the event BaseSeq, whose hash BaseHash
// the first remaining event names. BaseSeq is an anchor of what remains
// (audit verify --anchor cannot reach before it).
type Pruned struct {
	Event    uint64    `json:"event"` // the seq of the audit_pruned event
	Before   time.Time `json:"before"`
	BaseSeq  uint64    `json:"base_seq"`
	BaseHash string    `json:"base_hash,omitempty"`
	Events   uint64    `json:"events"`   // audit events removed
	Sessions int       `json:"sessions"` // sessions removed
	Calls    int       `json:"calls"`    // calls removed
	ByPID    int       `json:"by_pid,omitempty"`
	ByExe    string    `json:"by_exe,omitempty"`
	// The ledger's files, in bytes, before and after the compaction that
	// follows (reported, not recorded).
	BytesBefore int64 `json:"bytes_before,omitempty"`
	BytesAfter  int64 `json:"bytes_after,omitempty"`
}

// ExportTrailer is the last line of an export: {"export": {...}}.
type ExportTrailer struct {
	Export Exported `json:"export"`
}

// ChainError is the first broken link of the audit chain.
type ChainError struct {
	Seq     uint64 `json:"seq"`     // the event where the chain breaks
	Problem string `json:"problem"` // modified, missing, out_of_order, broken_link, truncated
	Detail  string `json:"detail"`
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("audit chain broken at event %d (%s): %s", e.Seq, e.Problem, e.Detail)
}
