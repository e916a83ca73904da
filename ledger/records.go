package ledger

import (
	"encoding/json"
	"time"
)

// The ledger stores the documents of package api as they are: api.Session,
// api.Call (with its Verdict), api.Approval, api.Decision and
// api.WriteBack. Its own record is the audit event.

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
