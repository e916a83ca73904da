package api

import "time"

// Effect is what a verdict lets happen to a tool call.
type Effect string

// The three effects, in the order policy rules are matched.
const (
	EffectDeny  Effect = "deny"
	EffectAsk   Effect = "ask"
	EffectAllow Effect = "allow"
)

// Valid reports whether e is one of the three effects.
func (e Effect) Valid() bool { return e == EffectDeny || e == EffectAsk || e == EffectAllow }

// Terminal reports whether e is final: allow or deny. An ask still waits
// for a person.
func (e Effect) Terminal() bool { return e == EffectAllow || e == EffectDeny }

// Reason codes the gate itself gives (rules give their own).
const (
	ReasonDefault            = "default"
	ReasonSchemaInvalid      = "schema_invalid"
	ReasonApprovalExpired    = "approval_expired"
	ReasonApprovalWithdrawn  = "approval_withdrawn" // the run that asked was stopped before anyone decided
	ReasonUserDenied         = "user_denied"
	ReasonUserApproved       = "user_approved"
	ReasonRequiresUser       = "requires_user_interaction"
	ReasonDuplicateToolUseID = "duplicate_tool_use_id"
	ReasonToolUseIDConflict  = "tool_use_id_conflict"
	ReasonGateUnavailable    = "gate_unavailable"
	ReasonNoApprover         = "no_approver"
	ReasonQueueFull          = "queue_full"
	ReasonToolgateGuard      = "toolgate_guard" // a built-in rule: the session touched the gate itself
	ReasonNotProposed        = "not_proposed"   // a permission prompt for a call the hook never proposed
	ReasonBadRequest         = "bad_request"    // the prompt tool could not read what Claude Code sent
	// ReasonDeferredSibling: a session deferred one call for a person
	// already (toolgate run --on-ask defer), and Claude Code keeps only the
	// last deferred call of a message: a second ask is denied, not deferred.
	ReasonDeferredSibling = "deferred_sibling"
	// ReasonHandedToClaude: in a session with toolgate install's hook,
	// nobody decided in toolgate before the hook had to answer, so Claude
	// Code's own permission dialog decides; toolgate wrote nothing back.
	ReasonHandedToClaude = "handed_to_claude"
)

// What a session does with an ask (toolgate run --on-ask).
const (
	OnAskWait  = "wait"  // wait for a person, up to the approval timeout
	OnAskDeny  = "deny"  // deny it at once: no_approver
	OnAskDefer = "defer" // record it and end the run; toolgate resume goes on once a person decided
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
	SourceGuard     = "guard"  // the built-in rules that protect the gate
)

// Statuses of an approval record. A record moves only from pending to one
// of the others, and a terminal status never changes. They are typed
// strings, so that none can stand for a decision's Effect by mistake.
const (
	StatusPending  string = "pending"
	StatusApproved string = "approved"
	StatusDenied   string = "denied"
	StatusExpired  string = "expired"
)

// Actors that are not people.
const (
	ActorExpiry    = "system:expiry"    // an approval's time ran out
	ActorHookGone  = "system:hook_gone" // an installed hook stopped waiting
	ActorWithdrawn = "system:withdrawn" // the run that asked was stopped (Ctrl-C, SIGTERM)
	// ActorClaudeDialog: in an installed session, a person answered Claude
	// Code's own dialog first, and the call ran.
	ActorClaudeDialog = "claude:dialog"
)

// Claude Code's hook events that toolgate handles.
const (
	PreToolUse         = "PreToolUse"
	PostToolUse        = "PostToolUse"
	PostToolUseFailure = "PostToolUseFailure"
	PostToolBatch      = "PostToolBatch"
	PermissionRequest  = "PermissionRequest"
	SessionEnd         = "SessionEnd"
)

// DefaultApprovalTimeout is how long an ask of a toolgate run session waits
// for a person when neither the run nor the rule says otherwise.
const DefaultApprovalTimeout = 15 * time.Minute

// DefaultInstalledApprovalTimeout is how long a PermissionRequest of a
// session gated by toolgate install's hook waits for a person when the
// installed hook does not say otherwise. A rule's approval_timeout may
// shorten it, never lengthen it: Claude Code kills the hook at its own
// timeout, which install derives from this one.
const DefaultInstalledApprovalTimeout = 5 * time.Minute
