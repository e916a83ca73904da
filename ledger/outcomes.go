package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/clip"
	"github.com/toolgate/toolgate/ledger/internal/store"
)

// OutcomeResult is what recording one outcome found.
type OutcomeResult struct {
	ToolUseID string
	// Undecided: the call ran but the gate never saw it proposed (it is
	// recorded now, without a verdict).
	Undecided bool
	// Duplicate: the call had run before; this execution is recorded in
	// the audit as a duplicate.
	Duplicate bool
	// Denied: the call ran although the gate denied it. Claude Code never
	// runs a call a hook denies, so either the gate's answer did not reach
	// it or the transcript says what did not happen (the model's code can
	// write it): either way the session cannot be trusted. The execution is
	// recorded, as the transcript says.
	Denied bool
}

// RecordOutcomes records what became of calls of one session once they
// were decided (toolgate run reads it from Claude Code's transcript): each
// execution, as RecordExecution does, and what the model saw, as
// RecordSeen does, all in one durable transaction. A call that ran without
// ever being proposed is recorded first, so that the audit shows it ran
// without a decision. Outcomes of one tool_use_id are taken in order (the
// same id sent twice: the first ran, the repeat was denied). An outcome
// whose Entry was recorded for its call already is one sent again (its
// answer was lost on the way) and is skipped: a retry never records a
// second execution.
func (l *Ledger) RecordOutcomes(ctx context.Context, sessionID string, outcomes []api.Outcome) ([]OutcomeResult, error) {
	for _, o := range outcomes {
		if o.ToolUseID == "" {
			return nil, fmt.Errorf("record outcomes: a tool_use_id is required")
		}
	}
	return write(ctx, l, func(t *tx) ([]OutcomeResult, error) {
		var results []OutcomeResult
		for _, o := range outcomes {
			r, err := recordOutcome(t, sessionID, o)
			if err != nil {
				return nil, err
			}
			results = append(results, r)
		}
		return results, nil
	})
}

func recordOutcome(t *tx, sessionID string, o api.Outcome) (OutcomeResult, error) {
	r := OutcomeResult{ToolUseID: o.ToolUseID}
	c, found, err := getCall(t, o.ToolUseID)
	if err != nil {
		return r, err
	}
	if !found {
		if !o.Ran || o.ToolName == "" || !json.Valid(o.Input) {
			// Seen but neither proposed nor run: the audit keeps what the
			// model saw.
			return r, t.event(KindCallSeen, o.ToolUseID, seenEvent{o.ToolUseID, clip.String(o.Seen, maxSeen)})
		}
		p := api.Call{ToolUseID: o.ToolUseID, SessionID: sessionID, ToolName: o.ToolName, Input: o.Input}
		doc, err := newProposal(p)
		if err != nil {
			return r, &store.Error{Err: err}
		}
		if c, _, err = propose(t, p, doc, false); err != nil {
			return r, err
		}
		r.Undecided = true
	}
	if o.Entry != "" && slices.Contains(c.TranscriptEntries, o.Entry) {
		return r, nil // sent again: recorded already
	}
	events := 0
	if o.Ran && found && c.Effect == api.EffectDeny {
		r.Denied = true
	}
	if o.Ran {
		c.Executions++
		kind := KindCallExecuted
		if c.Executions > 1 {
			kind, r.Duplicate = KindExecutionDuplicate, true
		} else {
			now := t.Now()
			c.Executed, c.Failed, c.ExecutedAt, c.Outcome = true, o.Failed, &now, o.Outcome
			if o.Failed {
				kind = KindCallFailed
			}
		}
		if err := t.event(kind, o.ToolUseID, execEvent{o.ToolUseID, c.Executions, o.Failed, o.Outcome}); err != nil {
			return r, err
		}
		events++
	}
	var seenAt uint64
	if seen := clip.String(o.Seen, maxSeen); seen != "" || !o.Ran {
		if err := t.event(KindCallSeen, o.ToolUseID, seenEvent{o.ToolUseID, seen}); err != nil {
			return r, err
		}
		// The call keeps the first (RecordSeen's rule): a later one is a
		// repeat's denial, in the audit only.
		if c.Seen == "" && seen != "" {
			head, err := t.head()
			if err != nil {
				return r, err
			}
			c.Seen, seenAt = seen, head.Seq
		}
		events++
	}
	if events == 0 {
		return r, nil
	}
	if o.Entry != "" {
		c.TranscriptEntries = append(c.TranscriptEntries, o.Entry)
	}
	return r, putCallSeenAt(t, c, seenAt)
}
