package api

import (
	"strings"
	"testing"
)

// The message a denied call gives the model reads as the design article's: the rule
// and its reason_code, one sentence of why, the rule's own words as a
// sentence of their own, and "Do not retry this call."
func TestDenyMessage(t *testing.T) {
	for _, tt := range []struct {
		v     Verdict
		extra string
		want  string
	}{
		{Verdict{RuleID: "ask-pr-main", ReasonCode: "protected_branch", Source: SourcePerson}, "",
			"Denied by rule ask-pr-main (reason_code protected_branch): a person denied it. Do not retry this call."},
		{Verdict{RuleID: "deny-env", ReasonCode: "secret_file", Source: SourcePolicy}, "no secrets",
			"Denied by rule deny-env (reason_code secret_file): the policy forbids it. No secrets. Do not retry this call."},
		{Verdict{RuleID: "deny-env", ReasonCode: "secret_file", Source: SourcePolicy}, "tool_name is required",
			"Denied by rule deny-env (reason_code secret_file): the policy forbids it. tool_name is required. Do not retry this call."},
		{Verdict{RuleID: "deny-env", ReasonCode: "secret_file", Source: SourcePolicy}, "  Secrets stay local!  ",
			"Denied by rule deny-env (reason_code secret_file): the policy forbids it. Secrets stay local! Do not retry this call."},
		{Verdict{ReasonCode: ReasonSchemaInvalid, Source: SourceSchema}, "/base: want string.",
			"Denied (reason_code schema_invalid): its input does not match the tool's schema. /base: want string. Do not retry this call."},
		{Verdict{ReasonCode: ReasonApprovalExpired, Source: SourceExpiry}, "",
			"Denied (reason_code approval_expired): nobody approved it before the approval expired. Do not retry this call."},
		{Verdict{RuleID: "ask-touch", ReasonCode: ReasonNoApprover, Source: SourceGate}, "",
			"Denied by rule ask-touch (reason_code no_approver): it needs a person's approval and this run has no approver. Do not retry this call."},
	} {
		if got := DenyMessage(tt.v, tt.extra); got != tt.want {
			t.Errorf("DenyMessage(%+v, %q)\n got %q\nwant %q", tt.v, tt.extra, got, tt.want)
		}
	}
}

// Every reason code's message is well joined: sentences end before the
// next begins, no doubled spaces or stops, and it ends with the notice.
func TestDenyMessageJoins(t *testing.T) {
	codes := []string{ReasonDefault, ReasonSchemaInvalid, ReasonApprovalExpired, ReasonUserDenied, ReasonRequiresUser,
		ReasonDuplicateToolUseID, ReasonToolUseIDConflict, ReasonGateUnavailable, ReasonNoApprover, ReasonQueueFull,
		ReasonBadRequest, "secret_file"}
	for _, code := range codes {
		for _, extra := range []string{"", "the rule's own words", "ends well."} {
			msg := DenyMessage(Verdict{RuleID: "r", ReasonCode: code}, extra)
			if !strings.HasSuffix(msg, ". "+RetryNotice) || strings.Contains(msg, "  ") || strings.Contains(msg, "..") ||
				strings.Contains(msg, "words Do") {
				t.Errorf("%s, %q: badly joined: %q", code, extra, msg)
			}
		}
	}
}
