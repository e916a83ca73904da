package api

import "strings"

// RetryNotice ends every message a denied call gives the model, as the
// approval flow's write-back does.
const RetryNotice = "Do not retry this call."

// DenyMessage is what the model reads when a call is denied, in the
// approval flow's words: "Denied by rule ask-pr-main (reason_code
// protected_branch): a person denied it. Do not retry this call." It names
// the rule (when one decided) and the reason_code, says why in one sentence, adds extra (the
// rule's own message, or what failed the tool's schema) as a sentence of
// its own, and ends with RetryNotice. It never carries host names, the
// gate's paths, tokens or an approver's notes: nothing but v's rule id and
// reason_code and extra goes into it.
func DenyMessage(v Verdict, extra string) string {
	var b strings.Builder
	b.WriteString("Denied")
	if v.RuleID != "" {
		b.WriteString(" by rule ")
		b.WriteString(v.RuleID)
	}
	b.WriteString(" (reason_code ")
	b.WriteString(v.ReasonCode)
	b.WriteString("): ")
	b.WriteString(explain(v))
	if s := Sentence(extra); s != "" {
		b.WriteString(" ")
		b.WriteString(s)
	}
	b.WriteString(" ")
	b.WriteString(RetryNotice)
	return b.String()
}

// Sentence makes text a sentence that another can follow: trimmed,
// starting with a capital when its first word is a plain lowercase word
// ("no secrets" reads "No secrets."; an identifier such as tool_name or
// /base is left as written), and ending with a full stop unless it ends
// with one already (or with ! or ?). "" stays "".
func Sentence(text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return ""
	}
	if first, _, _ := strings.Cut(text, " "); strings.Trim(first, "abcdefghijklmnopqrstuvwxyz,;:") == "" {
		text = strings.ToUpper(text[:1]) + text[1:]
	}
	switch text[len(text)-1] {
	case '.', '!', '?':
		return text
	}
	return text + "."
}

// explain says in one sentence why a call was denied: by its reason_code
// when the gate gave it, else by who decided.
func explain(v Verdict) string {
	switch v.ReasonCode {
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
		return "this tool_use_id was already used for a different call (another input, another working directory, or another session)."
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
	case ReasonBadRequest:
		return "the permission request could not be read."
	}
	if v.Source == SourcePerson {
		return "a person denied it."
	}
	return "the policy forbids it."
}
