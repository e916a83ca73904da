package supervisor

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/contain"
	"github.com/toolgate/toolgate/spool"
)

// ReportSchemaVersion is the version of the JSON report's shape. History:
//
//   - 1: 2026-11-29: calls with their effect, reason_code, rule, source,
//     actor, approval and whether they ran; counts.
//   - 2: 2026-12-02: each call is the audit's whole record of it (input,
//     times, what the model saw), as toolgate audit --json lists it.
//   - 3: 2026-12-03: an expired ask is an outcome of its own: counted
//     under expired only, never in denied_by_reason, as the exit code
//     (75, not 77) treats it; policy names the policy (it was empty).
//   - 4: 2026-12-04: hook_transport: how the calls reached the gate, http
//     (run's listener) or command (toolgate-hook).
//   - 5: 2026-12-07: withdrawn: an ask still waiting when someone stopped
//     the run (exit 130) is an outcome of its own, reason_code
//     approval_withdrawn, as an expired one is.
const ReportSchemaVersion = 5

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
	Calls          []api.Call   `json:"calls"`
	Counts         Counts       `json:"counts"`
	// Containment is the boundary claude ran in.
	Containment contain.Level `json:"containment"`
	// HookTransport is how the calls reached the gate: http (run's
	// listener) or command (toolgate-hook).
	HookTransport string `json:"hook_transport"`
	// AuditHead is the audit chain's head once the session's end was
	// recorded: an export made later must hold this event with this hash
	// (toolgate audit verify --anchor), so a report kept where the model
	// cannot write anchors the chain.
	AuditHead *api.ChainHead `json:"audit_head,omitempty"`
	// Deferred is the call the run ended on for a person to decide
	// (--on-ask defer): toolgate resume goes on once one did.
	Deferred *DeferredCall `json:"deferred,omitempty"`
	// GateLost says why the gate was lost during the session (replaced,
	// or gone for good): then claude was stopped and the exit is 69.
	GateLost string   `json:"gate_lost,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// DeferredCall is a call whose ask ended the run.
type DeferredCall struct {
	ToolUseID  string     `json:"tool_use_id"`
	ApprovalID string     `json:"approval_id"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
}

// ReportPolicy names the policy that decided.
type ReportPolicy struct {
	Path    string `json:"path"` // absolute
	Version int    `json:"version"`
	SHA256  string `json:"sha256"`
}

// Counts are the report's totals. Every call has one outcome: allowed,
// denied, expired (an ask nobody decided in time; its call carries effect
// deny and reason_code approval_expired, but it is no denial: exit 75, a
// retry may pass), withdrawn (an ask still waiting when someone stopped
// the run: reason_code approval_withdrawn, exit 130), deferred or pending
// (asked, never answered: claude ended first). So calls = allowed +
// denied + expired + withdrawn + deferred + pending.
type Counts struct {
	Calls     int            `json:"calls"`
	Allowed   int            `json:"allowed"`
	Denied    int            `json:"denied"`
	Expired   int            `json:"expired"`
	Withdrawn int            `json:"withdrawn"` // asked, and the run was stopped before anyone decided
	Pending   int            `json:"pending"`   // asked and never answered
	Deferred  int            `json:"deferred"`  // asked, and the run ended for a person to decide (--on-ask defer)
	Executed  int            `json:"executed"`
	ByReason  map[string]int `json:"denied_by_reason"` // the denied calls by reason_code
}

// Exit codes of toolgate run besides claude's own (sysexits).
const (
	ExitUnavailable = 69  // the gate was lost, or its record of the session
	ExitTempFail    = 75  // an approval expired
	ExitNoPerm      = 77  // a call was denied
	ExitDeferred    = 81  // a call waits for a person; toolgate resume goes on once one decided
	ExitInterrupted = 130 // run was stopped (SIGINT, SIGTERM, SIGHUP); what waited for a person was withdrawn
)

// buildReport assembles the report from the daemon's record of the
// session's calls and the spool (calls denied while the daemon was
// unreachable). A call of another session whose tool_use_id this one sent
// again counts only for what this session got.
func buildReport(session string, calls []api.Call, spooled []spool.Line) Report {
	r := Report{SchemaVersion: ReportSchemaVersion, Calls: []api.Call{}, Counts: Counts{ByReason: map[string]int{}}}
	seen := map[string]bool{}
	denied := map[string]spool.Line{}
	for _, l := range spooled {
		if l.Event == api.PreToolUse {
			denied[l.ToolUseID] = l
		}
	}
	for _, c := range calls {
		seen[c.ToolUseID] = true
		if c.SessionID == session {
			if l, ok := denied[c.ToolUseID]; ok && c.Effect != api.EffectDeny && !c.Executed {
				// Proposed, then the daemon went away, or decided after the
				// deadline: the fail-closed deny is what Claude Code got.
				c.Verdict = api.Deny(l.ReasonCode, api.SourceGate)
			}
			r.Calls = append(r.Calls, c)
		}
		for _, rep := range c.Repeats {
			if rep.SessionID == session && !rep.Resume {
				// The model sent the tool_use_id again: one more entry, with
				// the answer the repeat got.
				r.Calls = append(r.Calls, api.Call{ToolUseID: c.ToolUseID, SessionID: session, ToolName: c.ToolName,
					ProposedAt: rep.ProposedAt, Repeat: true,
					Verdict: api.Verdict{Effect: rep.Effect, ReasonCode: rep.ReasonCode, Source: api.SourceLedger}})
			}
		}
	}
	for _, l := range spooled {
		if l.Event == api.PreToolUse && !seen[l.ToolUseID] {
			seen[l.ToolUseID] = true
			t := l.Time
			r.Calls = append(r.Calls, api.Call{ToolUseID: l.ToolUseID, SessionID: session, ToolName: l.ToolName,
				Input: l.Input, ProposedAt: t, Verdict: api.Deny(l.ReasonCode, api.SourceGate)})
		}
	}
	for _, c := range r.Calls {
		r.Counts.add(c)
		if c.Deferred && c.Effect == api.EffectAsk {
			r.Deferred = &DeferredCall{ToolUseID: c.ToolUseID, ApprovalID: c.ApprovalID, ExpiresAt: c.ExpiresAt}
		}
	}
	return r
}

// addUnrecorded adds the calls toolgate run answered itself that the
// daemon's record lacks, and says so: a gate that answered without
// recording is not the gate.
func (r *Report) addUnrecorded(answered map[string]api.Call) []string {
	recorded := map[string]bool{}
	for _, c := range r.Calls {
		recorded[c.ToolUseID] = true
	}
	var ids []string
	for id := range answered {
		if !recorded[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	var warnings []string
	for _, id := range ids {
		r.Calls = append(r.Calls, answered[id])
		r.Counts.add(answered[id])
		warnings = append(warnings, fmt.Sprintf("call %s was answered by toolgate run but is not in the daemon's record", id))
	}
	return warnings
}

// add counts one call.
func (n *Counts) add(c api.Call) {
	n.Calls++
	if c.Executed {
		n.Executed++
	}
	switch {
	case c.Effect == api.EffectAllow:
		n.Allowed++
	case c.Effect == api.EffectDeny && c.ReasonCode == api.ReasonApprovalExpired:
		n.Expired++
	case c.Effect == api.EffectDeny && c.ReasonCode == api.ReasonApprovalWithdrawn:
		n.Withdrawn++
	case c.Effect == api.EffectDeny:
		n.Denied++
		n.ByReason[c.ReasonCode]++
	case c.Deferred:
		n.Deferred++
	default:
		n.Pending++
	}
}

// exitCode picks toolgate run's exit code: 81 if a call waits for a
// person (deferred), 75 if an approval expired, 77 if a call was denied,
// else claude's own code.
func (r *Report) exitCode() int {
	switch {
	case r.Counts.Deferred > 0:
		return ExitDeferred
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
	s += fmt.Sprintf(", %d expired", r.Counts.Expired)
	if r.Counts.Withdrawn > 0 {
		s += fmt.Sprintf(", %d withdrawn (the run was stopped)", r.Counts.Withdrawn)
	}
	if r.Counts.Pending > 0 {
		s += fmt.Sprintf(", %d never answered", r.Counts.Pending)
	}
	s += fmt.Sprintf(", %d executed", r.Counts.Executed)
	if r.Deferred != nil {
		s += fmt.Sprintf(", 1 deferred (%s waits for a person: toolgate approve or deny it, then toolgate resume)", r.Deferred.ApprovalID)
	}
	return s + fmt.Sprintf("; claude exited %d; exit %d", r.ClaudeExitCode, r.ExitCode)
}

// canWriteReport checks, before anything runs, that writeReport will be
// able to write path: its temporary file can be created beside it, and
// path is not a directory.
func canWriteReport(path string) error {
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return fmt.Errorf("it is a directory")
	}
	f, err := os.OpenFile(path+".tmp", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(path + ".tmp")
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
