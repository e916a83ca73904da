package claudecode

import (
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolgate/toolgate/api"
)

// Answer is what a hook prints on stdout for the event: a PreToolUse always
// gets an explicit decision, so that no other hook can loosen it (Claude
// Code combines hooks as deny > defer > ask > allow); a PermissionRequest
// gets allow (with the input to run) or deny, or nothing when toolgate
// leaves it to Claude Code's dialog (an ask verdict). Other events get no
// output (nil).
func Answer(event string, v api.Verdict) []byte {
	switch event {
	case api.PreToolUse:
		return preToolUse(v)
	case api.PermissionRequest:
		return permissionRequest(v)
	}
	return nil
}

func preToolUse(v api.Verdict) []byte {
	out, _ := sjson.SetBytes(nil, "hookSpecificOutput.hookEventName", api.PreToolUse)
	decision, reason := "deny", DenyText(v)
	switch v.Effect {
	case api.EffectAllow:
		decision, reason = "allow", "allowed by toolgate"+ruleSuffix(v)
	case api.EffectAsk:
		decision, reason = "ask", "toolgate asks for approval"+ruleSuffix(v)
	}
	out, _ = sjson.SetBytes(out, "hookSpecificOutput.permissionDecision", decision)
	out, _ = sjson.SetBytes(out, "hookSpecificOutput.permissionDecisionReason", reason)
	return out
}

// Defer is a PreToolUse answer that ends claude -p's run on the call, for
// a person to decide (toolgate run --on-ask defer): the result then
// carries terminal_reason "tool_deferred", and claude -p --resume proposes
// the call again.
func Defer(v api.Verdict) []byte {
	out, _ := sjson.SetBytes(nil, "hookSpecificOutput.hookEventName", api.PreToolUse)
	out, _ = sjson.SetBytes(out, "hookSpecificOutput.permissionDecision", "defer")
	out, _ = sjson.SetBytes(out, "hookSpecificOutput.permissionDecisionReason", "toolgate waits for a person to decide"+ruleSuffix(v))
	return out
}

func permissionRequest(v api.Verdict) []byte {
	out, _ := sjson.SetBytes(nil, "hookSpecificOutput.hookEventName", api.PermissionRequest)
	switch v.Effect {
	case api.EffectAllow:
		out, _ = sjson.SetBytes(out, "hookSpecificOutput.decision.behavior", "allow")
		if gjson.ValidBytes(v.UpdatedInput) && gjson.ParseBytes(v.UpdatedInput).IsObject() {
			// Always the input itself: older CLIs refused an allow without it.
			out, _ = sjson.SetRawBytes(out, "hookSpecificOutput.decision.updatedInput", v.UpdatedInput)
		}
	case api.EffectDeny:
		out, _ = sjson.SetBytes(out, "hookSpecificOutput.decision.behavior", "deny")
		out, _ = sjson.SetBytes(out, "hookSpecificOutput.decision.message", DenyText(v))
	default:
		return nil
	}
	return out
}

// DenyText is what the model reads of a deny.
func DenyText(v api.Verdict) string {
	if v.Message != "" {
		return v.Message
	}
	return api.DenyMessage(v, "")
}

func ruleSuffix(v api.Verdict) string {
	if v.RuleID == "" {
		return " (reason_code " + v.ReasonCode + ")"
	}
	return " (rule " + v.RuleID + ")"
}
