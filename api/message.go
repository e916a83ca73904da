package api

import (
	"fmt"
	"strings"
)

// DenyMessage is what the model reads when a call is denied. It names the
// rule and the reason_code and says not to retry the same arguments; it
// never carries host names, the gate's paths, tokens or an approver's
// notes. extra is the rule's own message for the model, if any.
func DenyMessage(v Verdict, extra string) string {
	var b strings.Builder
	b.WriteString("toolgate denied this call")
	switch {
	case v.RuleID != "":
		fmt.Fprintf(&b, " (rule %s, reason_code %s)", v.RuleID, v.ReasonCode)
	default:
		fmt.Fprintf(&b, " (reason_code %s)", v.ReasonCode)
	}
	b.WriteString(": ")
	b.WriteString(explain(v.ReasonCode))
	if extra != "" {
		b.WriteString(" ")
		b.WriteString(strings.TrimSpace(extra))
	}
	b.WriteString(" Do not retry the same call with the same arguments.")
	return b.String()
}

func explain(reason string) string {
	switch reason {
	case ReasonDefault:
		return "no rule allows it and the policy's default is to deny."
	case ReasonSchemaInvalid:
		return "its input does not match the tool's schema."
	case ReasonApprovalExpired:
		return "nobody approved it before the approval expired."
	case ReasonUserDenied:
		return "a person denied it."
	case ReasonRequiresUser:
		return "this tool needs a person at an interactive Claude Code session; it cannot run in this unattended session."
	case ReasonDuplicateToolUseID:
		return "this tool_use_id already ran; a call runs at most once."
	case ReasonToolUseIDConflict:
		return "this tool_use_id was already used for a different call."
	case ReasonGateUnavailable:
		return "the permission gate is unavailable, so nothing can run until it is back."
	case ReasonNoApprover:
		return "it needs a person's approval and this run has no approver."
	case ReasonQueueFull:
		return "too many calls of this session are already waiting for a person."
	case ReasonNotProposed:
		return "it was never proposed to the gate's hook, so it cannot be asked about."
	case ReasonToolgateGuard:
		return "it touches the permission gate itself (its files, sockets, approvals, or Claude Code's settings), which no session may."
	}
	return "the policy forbids it."
}
