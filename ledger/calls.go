package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

func callKey(toolUseID string) string { return "c/" + toolUseID }

func sessionCallKey(sessionID, toolUseID string) string {
	return "cs/" + sessionID + "/" + toolUseID
}

// Proposal is a tool call as the CLI proposed it.
type Proposal struct {
	ToolUseID string
	SessionID string
	AgentID   string
	ToolName  string
	Input     json.RawMessage // exactly as submitted
}

// InputSHA256 is the hash that decides whether two proposals of one
// tool_use_id are the same call: the SHA-256 of the tool name and the
// compacted input.
func InputSHA256(toolName string, input []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, input); err != nil {
		buf.Reset()
		buf.Write(input)
	}
	h := sha256.New()
	h.Write([]byte(toolName))
	h.Write([]byte{0})
	h.Write(buf.Bytes())
	return hex.EncodeToString(h.Sum(nil))
}

// Propose records a proposed call durably. A tool_use_id is unique: a
// repeat with the same input returns the existing call (existed is true)
// with its state; a repeat with another input fails with a *ConflictError,
// and the conflicting proposal is recorded in the audit.
func (l *Ledger) Propose(ctx context.Context, p Proposal) (call Call, existed bool, err error) {
	return l.Gate(ctx, p, func(Call, bool) (*CallDecision, *WriteBack) { return nil, nil })
}

// propose is Propose inside a transaction.
func propose(t *tx, p Proposal, hash string) (Call, bool, error) {
	var c Call
	found, err := t.get(callKey(p.ToolUseID), &c)
	if err != nil {
		return Call{}, false, err
	}
	if found && c.InputSHA256 == hash {
		return c, true, nil
	}
	if found {
		if err := t.event(KindCallConflict, p.ToolUseID, p); err != nil {
			return Call{}, false, err
		}
		return c, true, &ConflictError{Existing: c}
	}
	c = Call{ToolUseID: p.ToolUseID, SessionID: p.SessionID, AgentID: p.AgentID, ToolName: p.ToolName,
		Input: p.Input, InputSHA256: hash, ProposedAt: t.now}
	if err := t.put(callKey(c.ToolUseID), c); err != nil {
		return Call{}, false, err
	}
	if err := t.set(sessionCallKey(c.SessionID, c.ToolUseID), nil); err != nil {
		return Call{}, false, err
	}
	return c, false, t.event(KindCallProposed, c.ToolUseID, c)
}

// Decide records the decision that applied to a call. An ask may be
// followed by a terminal decision; a terminal decision never changes (an
// *AlreadyDecidedError carries the call with its decision).
func (l *Ledger) Decide(ctx context.Context, toolUseID string, d CallDecision) (Call, error) {
	v, err := l.write(ctx, func(t *tx) (any, error) {
		return decideCall(t, toolUseID, d)
	})
	c, _ := v.(Call)
	return c, err
}

func decideCall(t *tx, toolUseID string, d CallDecision) (Call, error) {
	var c Call
	found, err := t.get(callKey(toolUseID), &c)
	if err != nil {
		return Call{}, err
	}
	if !found {
		return Call{}, fmt.Errorf("decide %s: %w", toolUseID, ErrNotFound)
	}
	if c.Decision.Terminal() {
		return c, &AlreadyDecidedError{Call: c}
	}
	if d.DecidedAt.IsZero() {
		d.DecidedAt = t.now
	}
	c.Decision = &d
	at := d.DecidedAt
	c.DecidedAt = &at
	if err := t.put(callKey(toolUseID), c); err != nil {
		return Call{}, err
	}
	return c, t.event(KindCallDecided, toolUseID, c.Decision)
}

// Execution is what PostToolUse (or its failure twin) reported.
type Execution struct {
	Failed  bool
	Outcome string // a short summary: "ok", the error ...
}

// RecordExecution records that a call ran. It is accepted once per
// tool_use_id; a second one is recorded in the audit and reported with a
// *DuplicateExecutionError, never silently accepted. An execution without
// a recorded allow is recorded all the same: the audit must show it.
func (l *Ledger) RecordExecution(ctx context.Context, toolUseID string, e Execution) (Call, error) {
	v, err := l.write(ctx, func(t *tx) (any, error) {
		var c Call
		found, err := t.get(callKey(toolUseID), &c)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("record execution of %s: %w", toolUseID, ErrNotFound)
		}
		c.Executions++
		kind := KindCallExecuted
		switch {
		case c.Executions > 1:
			kind = KindExecutionDuplicate
		case e.Failed:
			kind = KindCallFailed
			at := t.now
			c.FailedAt, c.Outcome = &at, e.Outcome
		default:
			at := t.now
			c.ExecutedAt, c.Outcome = &at, e.Outcome
		}
		if err := t.put(callKey(toolUseID), c); err != nil {
			return nil, err
		}
		if err := t.event(kind, toolUseID, execEvent{toolUseID, c.Executions, e.Failed, e.Outcome}); err != nil {
			return nil, err
		}
		if c.Executions > 1 {
			return c, &DuplicateExecutionError{Call: c}
		}
		return c, nil
	})
	c, _ := v.(Call)
	return c, err
}

type execEvent struct {
	ToolUseID string `json:"tool_use_id"`
	Execution int    `json:"execution"`
	Failed    bool   `json:"failed"`
	Outcome   string `json:"outcome,omitempty"`
}

func writeBackKey(toolUseID string) string { return "w/" + toolUseID }

// RecordWriteBack records what the gate answered for a call. The first
// write-back of a tool_use_id stands; a later one returns it unchanged.
func (l *Ledger) RecordWriteBack(ctx context.Context, w WriteBack) (WriteBack, error) {
	v, err := l.write(ctx, func(t *tx) (any, error) { return writeBack(t, w) })
	wb, _ := v.(WriteBack)
	return wb, err
}

// writeBack stores a write-back unless the call has one already, and
// returns the one that stands.
func writeBack(t *tx, w WriteBack) (WriteBack, error) {
	var existing WriteBack
	found, err := t.get(writeBackKey(w.ToolUseID), &existing)
	if err != nil || found {
		return existing, err
	}
	if err := t.put(writeBackKey(w.ToolUseID), w); err != nil {
		return WriteBack{}, err
	}
	return w, t.event(KindWriteBack, w.ToolUseID, w)
}

// Call returns the call with the tool_use_id, or ErrNotFound.
func (l *Ledger) Call(ctx context.Context, toolUseID string) (Call, error) {
	var c Call
	return c, l.read(callKey(toolUseID), &c)
}

// WriteBackFor returns the write-back of a call, or ErrNotFound.
func (l *Ledger) WriteBackFor(ctx context.Context, toolUseID string) (WriteBack, error) {
	var w WriteBack
	return w, l.read(writeBackKey(toolUseID), &w)
}

// maxRepeats bounds how many repeats a call keeps; the audit has them all.
const maxRepeats = 100

// RecordRepeat records that a tool_use_id was proposed again, from which
// session, and what the gate answered; the call is then also listed among
// that session's calls.
func (l *Ledger) RecordRepeat(ctx context.Context, toolUseID, sessionID, effect, reasonCode string) (Call, error) {
	v, err := l.write(ctx, func(t *tx) (any, error) {
		var c Call
		found, err := t.get(callKey(toolUseID), &c)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("record repeat of %s: %w", toolUseID, ErrNotFound)
		}
		r := Repeat{ProposedAt: t.now, SessionID: sessionID, Effect: effect, ReasonCode: reasonCode}
		if len(c.Repeats) < maxRepeats {
			c.Repeats = append(c.Repeats, r)
		}
		if err := t.put(callKey(toolUseID), c); err != nil {
			return nil, err
		}
		if err := t.set(sessionCallKey(sessionID, toolUseID), nil); err != nil {
			return nil, err
		}
		return c, t.event(KindCallRepeated, toolUseID, r)
	})
	c, _ := v.(Call)
	return c, err
}

// maxSeen bounds what is kept of the text the model saw for one call.
const maxSeen = 2048

// RecordSeen records what the model saw as the result of a call (from
// PostToolBatch), so that a denied call is complete in the audit too. A
// call the ledger does not know is recorded as seen only in the audit.
func (l *Ledger) RecordSeen(ctx context.Context, toolUseID, seen string) error {
	if len(seen) > maxSeen {
		seen = seen[:maxSeen] + "…"
	}
	_, err := l.write(ctx, func(t *tx) (any, error) {
		var c Call
		found, err := t.get(callKey(toolUseID), &c)
		if err != nil {
			return nil, err
		}
		if found {
			c.Seen = seen
			if err := t.put(callKey(toolUseID), c); err != nil {
				return nil, err
			}
		}
		return nil, t.event(KindCallSeen, toolUseID, seenEvent{toolUseID, seen})
	})
	return err
}

type seenEvent struct {
	ToolUseID string `json:"tool_use_id"`
	Seen      string `json:"seen"`
}

// Gate records a proposal and, in the same durable transaction, the
// decision and write-back that decide returns for it: one fsync per gated
// call instead of three. decide runs inside the ledger's committer, so it
// must be quick and must not call the ledger; it gets the call as stored
// and whether it existed before, and may return nil for either result.
// A conflicting proposal is recorded and reported as in Propose, and
// decide is not called.
func (l *Ledger) Gate(ctx context.Context, p Proposal, decide func(c Call, existed bool) (*CallDecision, *WriteBack)) (Call, bool, error) {
	if p.ToolUseID == "" || p.SessionID == "" || p.ToolName == "" {
		return Call{}, false, fmt.Errorf("propose: tool_use_id, session_id and tool_name are required")
	}
	if !json.Valid(p.Input) {
		return Call{}, false, fmt.Errorf("propose: input is not valid JSON")
	}
	hash := InputSHA256(p.ToolName, p.Input)
	type out struct {
		call    Call
		existed bool
	}
	v, err := l.write(ctx, func(t *tx) (any, error) {
		c, existed, err := propose(t, p, hash)
		if err != nil {
			return out{c, existed}, err
		}
		d, wb := decide(c, existed)
		if d != nil {
			if c, err = decideCall(t, p.ToolUseID, *d); err != nil && !IsAlreadyDecided(err) {
				return nil, err
			}
		}
		if wb != nil {
			if _, err := writeBack(t, *wb); err != nil {
				return nil, err
			}
		}
		return out{c, existed}, nil
	})
	if v == nil {
		return Call{}, false, err
	}
	o := v.(out)
	return o.call, o.existed, err
}
