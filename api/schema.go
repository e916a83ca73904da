package api

import (
	_ "embed"
	"slices"
)

// The JSON Schemas (draft 2020-12) of the documents toolgate emits beside
// the policy (whose schema is package policy's): the approval flow's
// approval record, exactly as the approval flow gives it; the decision and
// the write-back, the approval flow's fields with additionalProperties
// false (the decision adds actor_pid, actor_exe and note); and the permission result, what the
// prompt tool answers Claude Code. They describe exactly what is emitted:
// tests validate what toolgate pending --json, show --json, audit export
// and the prompt tool put out against them, so a field added to a
// document fails until its schema says so.
var (
	//go:embed schemas/approval.schema.json
	approvalSchema []byte
	//go:embed schemas/decision.schema.json
	decisionSchema []byte
	//go:embed schemas/write-back.schema.json
	writeBackSchema []byte
	//go:embed schemas/permission-result.schema.json
	permissionResultSchema []byte
)

// Names of the document schemas, for Schema.
const (
	SchemaApproval         = "approval"
	SchemaDecision         = "decision"
	SchemaWriteBack        = "write-back"
	SchemaPermissionResult = "permission-result"
)

// SchemaNames lists the document schemas Schema knows, in the order a
// call's documents come about.
func SchemaNames() []string {
	return []string{SchemaApproval, SchemaDecision, SchemaWriteBack, SchemaPermissionResult}
}

// Schema returns the JSON Schema of a document by name (SchemaNames), or
// false for a name it does not know.
func Schema(name string) ([]byte, bool) {
	var s []byte
	switch name {
	case SchemaApproval:
		s = approvalSchema
	case SchemaDecision:
		s = decisionSchema
	case SchemaWriteBack:
		s = writeBackSchema
	case SchemaPermissionResult:
		s = permissionResultSchema
	default:
		return nil, false
	}
	return slices.Clone(s), true
}
