package main

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/api"
)

// What an allowed program printed reaches the audit as what the model
// saw, and the model chooses tool_use_ids: toolgate audit prints neither
// raw. An escape sequence (which could erase the line of a denied call,
// draw a forged one or set the window's title), a C1 control (CSI as one
// byte) or a bidi control is shown, never sent; a long line is cut at a
// character's boundary.
func TestAuditPrintsNoControlSequence(t *testing.T) {
	hostile := "\x1b[1A\x1b[2K\x1b]0;forged\x07allow … executed\u009b2K\u202egnp.exe\u2066x"
	calls := []api.Call{{ToolUseID: "toolu_\x1b[31mred", ToolName: "Bash\x1b]8;;http://x\x07", ProposedAt: time.Now(),
		Verdict:  api.Verdict{Effect: api.EffectAllow, Source: "policy", RuleID: "r\u202e1"},
		Executed: true, Seen: hostile + strings.Repeat("é", 200),
		Repeats: []api.Repeat{{SessionID: "ses_\x1bc", Effect: api.EffectDeny, ReasonCode: "x\u0085y"}}}}
	var b strings.Builder
	printCalls(&b, calls)
	out := b.String()
	for _, bad := range []string{"\x1b", "\x07", "\u009b", "\u0085", "\u202e", "\u2066"} {
		if strings.Contains(out, bad) {
			t.Errorf("the audit sends %q to the terminal:\n%q", bad, out)
		}
	}
	if !utf8.ValidString(out) {
		t.Errorf("the audit cuts a character in two: %q", out)
	}
	if !strings.Contains(out, "⟨U+202E⟩") {
		t.Errorf("the bidi control is not shown by name:\n%s", out)
	}
}
