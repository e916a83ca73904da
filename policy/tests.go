package policy

import (
	"encoding/json"
	"fmt"

	"github.com/toolgate/toolgate/api"
)

// TestCwd is the working directory inline tests run in unless a test's call
// names its own "cwd"; "~" expands to TestHome.
const (
	TestCwd  = "/project"
	TestHome = "/home/user"
)

// runTests checks the document's inline examples; one failure makes the
// document invalid.
func (l *loader) runTests(p *Policy, tests []TestDoc) {
	for i, t := range tests {
		ptr := fmt.Sprintf("/tests/%d", i)
		if msg := p.check(t); msg != "" {
			l.add(ptr, "", fmt.Sprintf("test %q: %s", t.Name, msg))
		}
	}
}

// check runs one inline test and returns what went wrong, or "".
func (p *Policy) check(t TestDoc) string {
	cwd := t.Call.Cwd
	if cwd == "" {
		cwd = TestCwd
	}
	s := NewSession(p, nil, cwd, TestHome)
	d := s.Evaluate(t.Call.Name, t.Call.Input)
	got := Describe(d)
	if d.Effect != t.Expect {
		return fmt.Sprintf("expected %s, got %s", t.Expect, got)
	}
	if len(t.Rule) > 0 {
		var want string                   // null: the default
		_ = json.Unmarshal(t.Rule, &want) // the document schema has checked its type
		if want != d.RuleID {
			by := "the default"
			if want != "" {
				by = fmt.Sprintf("rule %q", want)
			}
			return fmt.Sprintf("expected %s by %s, got %s", t.Expect, by, got)
		}
	}
	if t.ReasonCode != "" && t.ReasonCode != d.ReasonCode {
		return fmt.Sprintf("expected reason_code %q, got %s", t.ReasonCode, got)
	}
	return ""
}

// Describe says in a few words what decided a verdict: "deny by rule
// \"deny-env\" (reason_code \"secret_file\")".
func Describe(d api.Verdict) string {
	if d.RuleID == "" {
		return fmt.Sprintf("%s by the default (reason_code %q)", d.Effect, d.ReasonCode)
	}
	return fmt.Sprintf("%s by rule %q (reason_code %q)", d.Effect, d.RuleID, d.ReasonCode)
}
