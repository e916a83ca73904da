package api

import (
	"time"
)

// Routes of the approver socket (approve.sock), beside gate.sock so that
// what approvers may do is separate from what the hook may do.
const (
	RouteApprovals = "GET /v1/approvals"
	RouteApproval  = "GET /v1/approvals/{id}"
	RouteDecide    = "POST /v1/approvals/{id}/decide"
	RouteWatch     = "GET /v1/watch"
	// The audit chain, for toolgate audit verify and export: only the
	// daemon opens the ledger.
	RouteAuditVerify = "GET /v1/audit/verify"
	RouteAuditExport = "GET /v1/audit/export"
	RouteAuditEvent  = "GET /v1/audit/events/{seq}"
	RouteAuditPrune  = "POST /v1/audit/prune"
	// On gate.sock: toolgate run waits there for a person's decision.
	RouteWait      = "POST /v1/approvals/{id}/wait"
	RouteClaudePID = "POST /v1/sessions/{id}/claude"
)

// ApprovalDetail is one approval with everything that came of it.
type ApprovalDetail struct {
	Approval   Approval   `json:"approval"`
	ReasonCode string     `json:"reason_code,omitempty"` // the asking rule's
	Decision   *Decision  `json:"decision,omitempty"`
	WriteBack  *WriteBack `json:"write_back,omitempty"`
}

// ApprovalsResponse lists approvals.
type ApprovalsResponse struct {
	Approvals []ApprovalDetail `json:"approvals"`
}

// DecideRequest is a person's decision. Who decides is never part of it:
// the daemon reads it from the caller's peer credentials.
type DecideRequest struct {
	Decision string `json:"decision"` // "approve" or "deny"
	Reason   string `json:"reason,omitempty"`
	// ViaPID is the process a decision came through, when it is not the
	// caller's own: the notification server whose click toolgate notify
	// passes on. The daemon checks it as it checks the caller, so it can
	// only ever make a decision refused.
	ViaPID int `json:"via_pid,omitempty"`
}

// ClaudePIDRequest tells the daemon the pid of a session's claude.
type ClaudePIDRequest struct {
	PID int `json:"pid"`
}

// Watch event types.
const (
	EventSnapshot  = "snapshot"
	EventRequested = "requested"
	EventDecided   = "decided"
	EventExpired   = "expired"
)

// WatchEvent is one line of GET /v1/watch. The first is a snapshot of
// everything pending; then one event per change.
type WatchEvent struct {
	Type     string           `json:"type"`
	Time     time.Time        `json:"time"`
	Pending  []ApprovalDetail `json:"pending,omitempty"`  // snapshot
	Approval *ApprovalDetail  `json:"approval,omitempty"` // requested, decided, expired
}
