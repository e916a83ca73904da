package ledger

// The ledger stores the documents of package api as they are: api.Session,
// api.Call (with its Verdict), api.Approval, api.Decision and
// api.WriteBack, and appends an Event to the audit chain for every
// change, of one of these kinds.

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
	KindCallDeferred       = "call_deferred" // {"tool_use_id", "session_id"}: its ask ends the run (--on-ask defer)
	KindPolicyStored       = "policy_stored"
	KindIncident           = "incident"       // api.Incident: something refused as an attack or a mistake
	KindAuditExported      = "audit_exported" // api.Exported: the chain was exported up to a head
)
