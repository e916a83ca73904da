package supervisor

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/toolgate/toolgate/supervisor/api"
)

// ReportSchemaVersion is the version of the JSON report's shape.
const ReportSchemaVersion = 1

// Report is what toolgate run writes with --report: every call of the
// session and what came of it.
type Report struct {
	SchemaVersion  int          `json:"schema_version"`
	SessionID      string       `json:"session_id"`
	Policy         ReportPolicy `json:"policy"`
	StartedAt      time.Time    `json:"started_at"`
	EndedAt        time.Time    `json:"ended_at"`
	ClaudeExitCode int          `json:"claude_exit_code"`
	ExitCode       int          `json:"exit_code"`
	Calls          []ReportCall `json:"calls"`
	Counts         Counts       `json:"counts"`
	Warnings       []string     `json:"warnings,omitempty"`
}

// ReportPolicy names the policy that decided.
type ReportPolicy struct {
	Path    string `json:"path"`
	Version int    `json:"version"`
	SHA256  string `json:"sha256"`
}

// ReportCall is one call in the report.
type ReportCall struct {
	ToolUseID  string `json:"tool_use_id"`
	ToolName   string `json:"tool_name"`
	Effect     string `json:"effect"`
	ReasonCode string `json:"reason_code,omitempty"`
	RuleID     string `json:"rule_id,omitempty"`
	Source     string `json:"source,omitempty"`
	Actor      string `json:"actor,omitempty"`
	ApprovalID string `json:"approval_id,omitempty"`
	Executed   bool   `json:"executed"`
	Repeat     bool   `json:"repeat,omitempty"` // a later proposal of the same tool_use_id
}

// Counts are the report's totals.
type Counts struct {
	Calls    int            `json:"calls"`
	Allowed  int            `json:"allowed"`
	Denied   int            `json:"denied"`
	Expired  int            `json:"expired"`
	Pending  int            `json:"pending"` // asked and never answered
	Executed int            `json:"executed"`
	ByReason map[string]int `json:"denied_by_reason"`
}

// Exit codes of toolgate run besides claude's own (sysexits).
const (
	ExitTempFail    = 75 // an approval expired
	ExitNoPerm      = 77 // a call was denied
	ExitUnavailable = 69
	ExitConfig      = 78
	ExitUsage       = 64
)

// buildReport assembles the report from the daemon's calls and the hook's
// spool (calls denied while the daemon was unreachable).
func buildReport(session string, calls []api.Call, spooled []ReportCall) Report {
	r := Report{SchemaVersion: ReportSchemaVersion, Calls: []ReportCall{}, Counts: Counts{ByReason: map[string]int{}}}
	seen := map[string]bool{}
	fromSpool := map[string]ReportCall{}
	for _, c := range spooled {
		fromSpool[c.ToolUseID] = c
	}
	for _, c := range calls {
		seen[c.ToolUseID] = true
		if c.SessionID != session {
			// Another session's call whose tool_use_id this one sent again:
			// only what this session got counts.
			for _, rep := range c.Repeats {
				if rep.SessionID == session {
					r.Calls = append(r.Calls, ReportCall{ToolUseID: c.ToolUseID, ToolName: c.ToolName, Effect: rep.Effect,
						ReasonCode: rep.ReasonCode, Source: api.SourceLedger, Repeat: true})
				}
			}
			continue
		}
		rc := ReportCall{ToolUseID: c.ToolUseID, ToolName: c.ToolName, Effect: c.Effect,
			ReasonCode: c.ReasonCode, RuleID: c.RuleID, Source: c.Source, Actor: c.Actor,
			ApprovalID: c.ApprovalID, Executed: c.Executed}
		if s, ok := fromSpool[c.ToolUseID]; ok && rc.Effect == "" {
			// Proposed, then the daemon went away before it decided: the
			// hook's fail-closed deny is what happened.
			rc.Effect, rc.ReasonCode, rc.Source = s.Effect, s.ReasonCode, s.Source
		}
		r.Calls = append(r.Calls, rc)
		for _, rep := range c.Repeats {
			if rep.SessionID != session {
				continue
			}
			// The model sent the tool_use_id again: one more entry, with
			// the answer the repeat got.
			r.Calls = append(r.Calls, ReportCall{ToolUseID: c.ToolUseID, ToolName: c.ToolName, Effect: rep.Effect,
				ReasonCode: rep.ReasonCode, Source: api.SourceLedger, Repeat: true})
		}
	}
	for _, c := range spooled {
		if !seen[c.ToolUseID] {
			seen[c.ToolUseID] = true
			r.Calls = append(r.Calls, c)
		}
	}
	for _, c := range r.Calls {
		r.Counts.Calls++
		if c.Executed {
			r.Counts.Executed++
		}
		switch {
		case c.Effect == api.Allow:
			r.Counts.Allowed++
		case c.Effect == api.Deny && c.ReasonCode == api.ReasonApprovalExpired:
			r.Counts.Expired++
			r.Counts.ByReason[c.ReasonCode]++
		case c.Effect == api.Deny:
			r.Counts.Denied++
			r.Counts.ByReason[c.ReasonCode]++
		default:
			r.Counts.Pending++
		}
	}
	return r
}

// exitCode picks toolgate run's exit code: 75 if an approval expired, 77
// if a call was denied, else claude's own code.
func (r *Report) exitCode() int {
	switch {
	case r.Counts.Expired > 0:
		return ExitTempFail
	case r.Counts.Denied > 0:
		return ExitNoPerm
	}
	return r.ClaudeExitCode
}

// Summary is the one line run prints on stderr at the end.
func (r *Report) Summary() string {
	var reasons []string
	for reason, n := range r.Counts.ByReason {
		reasons = append(reasons, fmt.Sprintf("%s %d", reason, n))
	}
	sort.Strings(reasons)
	noun := "calls"
	if r.Counts.Calls == 1 {
		noun = "call"
	}
	s := fmt.Sprintf("toolgate: %d %s: %d allowed, %d denied", r.Counts.Calls, noun, r.Counts.Allowed, r.Counts.Denied)
	if len(reasons) > 0 {
		s += " (" + strings.Join(reasons, ", ") + ")"
	}
	s += fmt.Sprintf(", %d expired, %d executed; claude exited %d; exit %d", r.Counts.Expired, r.Counts.Executed, r.ClaudeExitCode, r.ExitCode)
	return s
}

// readSpool reads the calls the hook denied without the daemon.
func readSpool(path string) []ReportCall {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []ReportCall
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct {
			Event      string `json:"hook_event_name"`
			ToolUseID  string `json:"tool_use_id"`
			ToolName   string `json:"tool_name"`
			ReasonCode string `json:"reason_code"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Event != "PreToolUse" || line.ToolUseID == "" {
			continue
		}
		out = append(out, ReportCall{ToolUseID: line.ToolUseID, ToolName: line.ToolName, Effect: api.Deny,
			ReasonCode: line.ReasonCode, Source: api.SourceGate})
	}
	return out
}

// writeReport writes the report atomically (0600).
func writeReport(path string, r Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return os.Rename(tmp, path)
}
