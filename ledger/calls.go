package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/ledger/internal/store"
)

func callKey(toolUseID string) string { return "c/" + toolUseID }

func sessionCallKey(sessionID, toolUseID string) string {
	return "cs/" + sessionID + "/" + toolUseID
}

// InputSHA256 is the hash that decides whether two proposals of one
// tool_use_id are the same call: the SHA-256 of the tool name and the
// compacted input.
func InputSHA256(toolName string, input []byte) string {
	hash, err := compactSHA256(toolName, input)
	if err != nil {
		return sumInput(toolName, input)
	}
	return hash
}

// compactSHA256 is InputSHA256 of an input that must be JSON.
func compactSHA256(toolName string, input []byte) (string, error) {
	compacted, err := compact(input)
	if err != nil {
		return "", err
	}
	return sumInput(toolName, compacted), nil
}

// compact is input compacted, which checks it as json.Valid would.
func compact(input []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(input)) // at most as long: one allocation, where json.Compact would grow it step by step
	if err := json.Compact(&buf, input); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func sumInput(toolName string, compacted []byte) string {
	h := sha256.New()
	h.Write([]byte(toolName))
	h.Write([]byte{0})
	h.Write(compacted)
	return hex.EncodeToString(h.Sum(nil))
}

// Record records a proposed call (its ToolUseID, SessionID, AgentID,
// ToolName and Input) with the verdict the gate reached for it, in one
// durable transaction, and returns the call as recorded. The verdict is
// recorded when the tool_use_id is new, or known but never decided nor run
// (the daemon died in between); fresh reports that it was. Otherwise the
// call is left as it was: it was decided before (or ran), and the caller
// answers from what is recorded. A known tool_use_id proposed with another
// input, or from another working directory, is recorded in the audit and
// fails with a *ConflictError. An empty verdict records the proposal
// alone. fromHook says a hook proposes it (PreToolUse, whose event always
// names its directory): a terminal verdict's write-back is recorded in the
// same transaction (one fsync per call), and only the very directory
// recorded is the same call's.
func (l *Ledger) Record(ctx context.Context, c api.Call, v api.Verdict, fromHook bool) (call api.Call, fresh bool, err error) {
	if c.ToolUseID == "" || c.SessionID == "" || c.ToolName == "" {
		return api.Call{}, false, fmt.Errorf("propose: tool_use_id, session_id and tool_name are required")
	}
	doc, err := newProposal(c) // the input's one pass, before the committer's
	if err != nil {
		return api.Call{}, false, err
	}
	v.UpdatedInput, v.ExpiresAt = nil, nil // the answer's, not the call's
	type out struct {
		call  api.Call
		fresh bool
	}
	o, err := write(ctx, l, func(t *tx) (out, error) {
		stored, existed, err := propose(t, c, doc, fromHook)
		if err != nil {
			return out{stored, false}, err
		}
		if existed && (stored.Effect != "" || stored.Executions > 0) {
			return out{stored, false}, nil
		}
		if v.Effect == "" {
			return out{stored, !existed}, nil
		}
		if stored, err = setVerdict(t, stored, v); err != nil {
			return out{}, err
		}
		if fromHook && v.Effect.Terminal() {
			if _, err := putWriteBack(t, api.WriteBackOf(c.ToolUseID, v)); err != nil {
				return out{}, err
			}
		}
		return out{stored, true}, nil
	})
	return o.call, o.fresh, err
}

// Propose records a proposed call without a verdict; existed reports that
// the tool_use_id was known (with this input).
func (l *Ledger) Propose(ctx context.Context, c api.Call) (call api.Call, existed bool, err error) {
	call, fresh, err := l.Record(ctx, c, api.Verdict{}, false)
	return call, !fresh, err
}

// propose records a proposal inside a transaction, or finds it recorded;
// doc is the proposal encoded (newProposal). A hook's proposal (fromHook)
// is the same call only in the very directory recorded; another's, which
// may carry none, in any.
func propose(t *tx, p api.Call, doc proposalJSON, fromHook bool) (api.Call, bool, error) {
	c, found, err := getCall(t, p.ToolUseID)
	if err != nil {
		return api.Call{}, false, err
	}
	if found && c.InputSHA256 == doc.call.InputSHA256 && sameDir(c.Cwd, p.Cwd, fromHook) {
		return c, true, nil
	}
	if found {
		if err := t.event(KindCallConflict, p.ToolUseID, proposal(p)); err != nil {
			return api.Call{}, false, err
		}
		return c, true, &ConflictError{Existing: c}
	}
	c = doc.call
	c.ProposedAt = t.Now()
	if err := t.event(KindCallProposed, c.ToolUseID, doc.at(c.ProposedAt)); err != nil {
		return api.Call{}, false, err
	}
	head, err := t.head()
	if err != nil {
		return api.Call{}, false, err
	}
	if err := t.Put(callKey(c.ToolUseID), storedCall{Call: c, InputAt: head.Seq}); err != nil {
		return api.Call{}, false, err
	}
	if err := t.Set(sessionCallKey(c.SessionID, c.ToolUseID), nil); err != nil {
		return api.Call{}, false, err
	}
	return c, false, nil
}

// proposalJSON is a proposal (its call_proposed event's document) encoded
// but for its time, which is its batch's: the committer runs one batch at a
// time, and encoding the input (1 KB or more, compacted and validated by
// json.Marshal) would take most of an operation's time there. at gives the
// bytes json.Marshal gives for the call proposed at that time.
type proposalJSON struct {
	call       api.Call // ProposedAt unset
	head, tail []byte   // the encoding before and after proposed_at's value
}

// proposedAtZero is proposed_at with the zero time, as json.Marshal writes
// it. Every field after it is one of the verdict or the execution, all
// empty in a proposal: the last occurrence is the field, whatever the input
// holds.
const proposedAtZero = `"proposed_at":"0001-01-01T00:00:00Z"`

// inputNull is the input field of a call with no input, as json.Marshal
// writes it. The fields before it are strings, in which every quote is
// escaped, so the first occurrence is the field
// (TestProposalCutsAfterStrings holds api.Call to that).
const inputNull = `"input":null`

// sameDir reports whether a call proposed in directory proposed is the
// one recorded in recorded: a relative path in its input names another
// file elsewhere. A hook's event always names its directory, and only
// that very one is the call's; the prompt tool proposes without one
// (Claude Code sends none there), after the hook proposed the call, and
// what carries none matches any.
func sameDir(recorded, proposed string, fromHook bool) bool {
	return recorded == proposed || !fromHook && (recorded == "" || proposed == "")
}

// newProposal encodes the proposal of p, whose input must be JSON. The
// input is compacted once, for its hash and for the document: json.Marshal
// would compact it again as it copied it (a RawMessage's bytes are
// compacted, and HTML characters escaped), so the call is encoded without
// it, and the compacted input put in as json.Marshal would have written it.
func newProposal(p api.Call) (proposalJSON, error) {
	compacted, err := compact(p.Input)
	if err != nil {
		return proposalJSON{}, fmt.Errorf("propose: input is not valid JSON")
	}
	c := proposal(p)
	c.InputSHA256 = sumInput(c.ToolName, compacted)
	bare := c
	bare.Input = nil
	raw, err := json.Marshal(bare)
	if err != nil {
		return proposalJSON{}, fmt.Errorf("propose: encode call %s: %w", c.ToolUseID, err)
	}
	in, at := bytes.Index(raw, []byte(inputNull)), bytes.LastIndex(raw, []byte(proposedAtZero))
	if in < 0 || at < in {
		return proposalJSON{}, fmt.Errorf("propose: encode call %s: no input or proposed_at in %.80q", c.ToolUseID, raw)
	}
	var head bytes.Buffer
	head.Grow(at + len(compacted) + len(`"proposed_at":"`)) // the input escaped once or not at all: one allocation mostly
	head.Write(raw[:in+len(`"input":`)])
	if needsHTMLEscape(compacted) {
		json.HTMLEscape(&head, compacted)
	} else {
		head.Write(compacted)
	}
	head.Write(raw[in+len(inputNull) : at+len(`"proposed_at":"`)])
	return proposalJSON{call: c, head: head.Bytes(), tail: raw[at+len(proposedAtZero)-1:]}, nil
}

// needsHTMLEscape reports whether json.HTMLEscape may change b: whether it
// holds <, > or &, or a byte 0xE2, with which U+2028 and U+2029 start in
// UTF-8 (as do other characters HTMLEscape leaves alone: this is a quick
// test, not an exact one).
func needsHTMLEscape(b []byte) bool {
	return bytes.ContainsAny(b, "<>&") || bytes.IndexByte(b, 0xe2) >= 0
}

// at is the proposal's document for a call proposed at t, which is UTC.
func (d proposalJSON) at(t time.Time) marshaled {
	b := make([]byte, 0, len(d.head)+len(time.RFC3339Nano)+len(d.tail))
	b = append(b, d.head...)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, d.tail...)
}

// proposal is what of p a proposal records.
func proposal(p api.Call) api.Call {
	return api.Call{ToolUseID: p.ToolUseID, SessionID: p.SessionID, AgentID: p.AgentID, ToolName: p.ToolName, Input: p.Input, Cwd: p.Cwd}
}

// storedCall is a call as the ledger stores it. Its input and what the
// model saw are stored once: in its call_proposed event and in its first
// call_seen event, which input_at and seen_at name (the record is written
// over as the call is decided and run; the events never are). A call
// keeps them itself (input_at, seen_at 0) once those events are pruned
// before it, or when it was recorded before 2026-12-02.
type storedCall struct {
	api.Call
	Input   json.RawMessage `json:"input,omitempty"` // when InputAt is 0
	InputAt uint64          `json:"input_at,omitempty"`
	Seen    string          `json:"seen,omitempty"` // when SeenAt is 0
	SeenAt  uint64          `json:"seen_at,omitempty"`
}

// MarshalJSON writes the input, and what the model saw, in the record only
// when no event holds them.
func (s storedCall) MarshalJSON() ([]byte, error) {
	type plain storedCall
	p := plain(s)
	p.Input, p.Seen = nil, ""
	if p.InputAt == 0 {
		p.Input = s.Call.Input
	}
	if p.SeenAt == 0 {
		p.Seen = s.Call.Seen
	}
	return json.Marshal(p)
}

// refs are the events a call's record names for what it does not hold
// itself: its input (call_proposed) and what the model saw (call_seen).
type refs struct{ input, seen uint64 }

// getCall reads a call inside a transaction, with its input and what the
// model saw.
func getCall(t *tx, toolUseID string) (api.Call, bool, error) {
	raw, found, err := t.GetRaw(callKey(toolUseID))
	if err != nil || !found {
		return api.Call{}, found, err
	}
	c, r, err := decodeCall(raw)
	if err == nil {
		var missing uint64
		missing, err = joinEvents(&c, r, func(seq uint64) ([]byte, error) {
			ev, _, err := t.GetRaw(eventKey(seq))
			return ev, err
		})
		if missing != 0 {
			err = fmt.Errorf("its record names event %d, which the ledger does not hold: the ledger is damaged (toolgate audit verify)", missing)
		}
	}
	if err != nil {
		return api.Call{}, false, &store.Error{Err: fmt.Errorf("decode call %s: %w", toolUseID, err)}
	}
	return c, true, nil
}

// putCall stores a call read by getCall, its input and what the model saw
// where they were.
func putCall(t *tx, c api.Call) error { return putCallSeenAt(t, c, 0) }

// putCallSeenAt stores a call read by getCall; seenAt, when not 0, is the
// call_seen event that holds what the model saw, c.Seen, set by the
// operation.
func putCallSeenAt(t *tx, c api.Call, seenAt uint64) error {
	raw, _, err := t.GetRaw(callKey(c.ToolUseID))
	if err != nil {
		return err
	}
	r := refsOf(raw)
	if seenAt != 0 {
		r.seen = seenAt
	}
	return t.Put(callKey(c.ToolUseID), storedCall{Call: c, InputAt: r.input, SeenAt: r.seen})
}

// refsOf is what a stored call's record names in events.
func refsOf(raw []byte) refs {
	at := gjson.GetManyBytes(raw, "input_at", "seen_at")
	return refs{at[0].Uint(), at[1].Uint()}
}

// joinEvents fills in what c's record names in events (r) from them, read
// by read (nil for an event the ledger does not hold: missing is its seq).
func joinEvents(c *api.Call, r refs, read func(seq uint64) ([]byte, error)) (missing uint64, err error) {
	for _, j := range [...]struct {
		seq              uint64
		kind, path, what string
		set              func(gjson.Result)
	}{
		{r.input, KindCallProposed, "data.input", "its input", func(v gjson.Result) { c.Input = json.RawMessage(v.Raw) }},
		{r.seen, KindCallSeen, "data.seen", "what the model saw", func(v gjson.Result) { c.Seen = v.String() }},
	} {
		if j.seq == 0 {
			continue
		}
		ev, err := read(j.seq)
		if err != nil || ev == nil {
			return j.seq, err
		}
		v, err := eventField(ev, j.kind, c.ToolUseID, j.seq, j.path, j.what)
		if err != nil {
			return 0, err
		}
		j.set(v)
	}
	return 0, nil
}

// eventField is the field path of an event of kind about the call
// toolUseID, stored as seq; what names what the record keeps there.
func eventField(event []byte, kind, toolUseID string, seq uint64, path, what string) (gjson.Result, error) {
	r := gjson.GetManyBytes(event, "kind", "subject", path)
	if r[0].Str != kind || r[1].Str != toolUseID || !r[2].Exists() {
		return gjson.Result{}, fmt.Errorf("%s is in event %d, which is not its %s event: the ledger is damaged (toolgate audit verify)", what, seq, kind)
	}
	return r[2], nil
}

// joinCall fills in what a call read outside a transaction, as decodeCall
// left it, holds in events (r). A call pruned since its record was read
// (its record, then its events removed) is not found.
func (l *Ledger) joinCall(c *api.Call, r refs) error {
	for {
		missing, err := joinEvents(c, r, func(seq uint64) ([]byte, error) {
			ev, err := l.store.ReadRaw(eventKey(seq))
			if errors.Is(err, ErrNotFound) {
				return nil, nil
			}
			return ev, err
		})
		if err != nil {
			return fmt.Errorf("read call %s: %w", c.ToolUseID, err)
		}
		if missing == 0 {
			return nil
		}
		// Pruned since the record was read: the record holds it now, or
		// the call was pruned too (and maybe proposed again since).
		raw, err := l.store.ReadRaw(callKey(c.ToolUseID))
		if err != nil {
			return named("call", c.ToolUseID, err)
		}
		again, r2, err := decodeCall(raw)
		if err != nil {
			return fmt.Errorf("read call %s: %w", c.ToolUseID, err)
		}
		if r2 == r {
			return fmt.Errorf("read call %s: its record names event %d, which the ledger no longer holds: the ledger is damaged (toolgate audit verify)", c.ToolUseID, missing)
		}
		*c, r = again, r2
	}
}

// decodeCall reads a stored call, and the events that hold what its record
// does not (joinEvents reads them). Calls recorded before 2026-12-02 kept
// their decision nested ("decision") and a failed run as failed_at; they
// read as the same call.
func decodeCall(raw []byte) (api.Call, refs, error) {
	var s storedCall
	if err := json.Unmarshal(raw, &s); err != nil {
		return api.Call{}, refs{}, err
	}
	c := s.Call
	c.Input, c.Seen = s.Input, s.Seen
	var old struct {
		Decision *api.Verdict `json:"decision"`
		FailedAt *time.Time   `json:"failed_at"`
	}
	if (c.Effect == "" && bytes.Contains(raw, []byte(`"decision":`))) || (c.Executions > 0 && !c.Executed) {
		json.Unmarshal(raw, &old)
	}
	if c.Effect == "" && old.Decision != nil {
		c.Verdict = *old.Decision
	}
	if c.Executions > 0 && !c.Executed {
		c.Executed = true
		if old.FailedAt != nil {
			c.Failed, c.ExecutedAt = true, old.FailedAt
		}
	}
	return c, refs{s.InputAt, s.SeenAt}, nil
}

// Decide records the verdict that applies to a call. An ask may be
// followed by a terminal verdict; a terminal one never changes (an
// *AlreadyDecidedError carries the call with its verdict).
func (l *Ledger) Decide(ctx context.Context, toolUseID string, v api.Verdict) (api.Call, error) {
	v.UpdatedInput, v.ExpiresAt = nil, nil
	return write(ctx, l, func(t *tx) (api.Call, error) { return decideCall(t, toolUseID, v) })
}

func decideCall(t *tx, toolUseID string, v api.Verdict) (api.Call, error) {
	c, found, err := getCall(t, toolUseID)
	if err != nil {
		return api.Call{}, err
	}
	if !found {
		return api.Call{}, fmt.Errorf("decide %s: %w", toolUseID, ErrNotFound)
	}
	return setVerdict(t, c, v)
}

// setVerdict records v as the verdict of the call c, as stored.
func setVerdict(t *tx, c api.Call, v api.Verdict) (api.Call, error) {
	if c.Effect.Terminal() {
		return c, &AlreadyDecidedError{Call: c}
	}
	if v.DecidedAt == nil {
		now := t.Now()
		v.DecidedAt = &now
	}
	c.Verdict = v
	if err := putCall(t, c); err != nil {
		return api.Call{}, err
	}
	return c, t.event(KindCallDecided, c.ToolUseID, v)
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
func (l *Ledger) RecordExecution(ctx context.Context, toolUseID string, e Execution) (api.Call, error) {
	return write(ctx, l, func(t *tx) (api.Call, error) {
		c, found, err := getCall(t, toolUseID)
		if err != nil {
			return api.Call{}, err
		}
		if !found {
			return api.Call{}, fmt.Errorf("record execution of %s: %w", toolUseID, ErrNotFound)
		}
		c.Executions++
		kind := KindCallExecuted
		if c.Executions > 1 {
			kind = KindExecutionDuplicate
		} else {
			now := t.Now()
			c.Executed, c.Failed, c.ExecutedAt, c.Outcome = true, e.Failed, &now, e.Outcome
			if e.Failed {
				kind = KindCallFailed
			}
		}
		if err := putCall(t, c); err != nil {
			return api.Call{}, err
		}
		if err := t.event(kind, toolUseID, execEvent{toolUseID, c.Executions, e.Failed, e.Outcome}); err != nil {
			return api.Call{}, err
		}
		if c.Executions > 1 {
			return c, &DuplicateExecutionError{Call: c}
		}
		return c, nil
	})
}

// execEvent is the audit's record of one execution.
type execEvent struct {
	ToolUseID string `json:"tool_use_id"`
	Execution int    `json:"execution"`
	Failed    bool   `json:"failed"`
	Outcome   string `json:"outcome,omitempty"`
}

func writeBackKey(toolUseID string) string { return "w/" + toolUseID }

// RecordWriteBack records what the gate answered for a call. The first
// write-back of a tool_use_id stands; a later one returns it unchanged.
func (l *Ledger) RecordWriteBack(ctx context.Context, w api.WriteBack) (api.WriteBack, error) {
	return write(ctx, l, func(t *tx) (api.WriteBack, error) { return putWriteBack(t, w) })
}

// putWriteBack stores a write-back unless the call has one already, and
// returns the one that stands.
func putWriteBack(t *tx, w api.WriteBack) (api.WriteBack, error) {
	var existing api.WriteBack
	found, err := t.Get(writeBackKey(w.ToolUseID), &existing)
	if err != nil || found {
		return existing, err
	}
	if err := t.Put(writeBackKey(w.ToolUseID), w); err != nil {
		return api.WriteBack{}, err
	}
	return w, t.event(KindWriteBack, w.ToolUseID, w)
}

// Call returns the call with the tool_use_id, or ErrNotFound.
func (l *Ledger) Call(ctx context.Context, toolUseID string) (api.Call, error) {
	raw, err := l.store.ReadRaw(callKey(toolUseID))
	if err != nil {
		return api.Call{}, named("call", toolUseID, err)
	}
	return l.decodeCall(raw)
}

// decodeCall reads a stored call outside a transaction, with its input.
func (l *Ledger) decodeCall(raw []byte) (api.Call, error) {
	c, r, err := decodeCall(raw)
	if err != nil {
		return c, err
	}
	return c, l.joinCall(&c, r)
}

// WriteBackFor returns the write-back of a call, or ErrNotFound.
func (l *Ledger) WriteBackFor(ctx context.Context, toolUseID string) (api.WriteBack, error) {
	var w api.WriteBack
	return w, named("write-back of call", toolUseID, l.read(writeBackKey(toolUseID), &w))
}

// ErrResumeAnswered is TakeResume's error for a deferred call whose resume
// was answered already, or a call that was never deferred.
var ErrResumeAnswered = errors.New("the deferred call's resume was answered already")

// TakeResume answers, once, the proposal of a deferred call in its
// session's resume: in one transaction it finds the call deferred,
// decided and never proposed again by its session (another session's
// proposals were refused and do not count), and records this proposal as
// its repeat with the decision it gets. Any later proposal of the id, or
// one from another session, gets ErrResumeAnswered: a person's approval
// runs one call.
func (l *Ledger) TakeResume(ctx context.Context, toolUseID, sessionID string) (api.Call, error) {
	return write(ctx, l, func(t *tx) (api.Call, error) {
		c, found, err := getCall(t, toolUseID)
		switch {
		case err != nil:
			return api.Call{}, err
		case !found:
			return api.Call{}, fmt.Errorf("take the resume of %s: %w", toolUseID, ErrNotFound)
		case !c.Deferred || c.SessionID != sessionID || c.Effect == "" || c.Effect == api.EffectAsk:
			return c, ErrResumeAnswered
		}
		for _, r := range c.Repeats {
			if r.SessionID == sessionID {
				return c, ErrResumeAnswered
			}
		}
		r := api.Repeat{ProposedAt: t.Now(), SessionID: sessionID, Effect: c.Effect, ReasonCode: c.ReasonCode, Resume: true}
		c.Repeats = append(c.Repeats, r)
		if err := putCall(t, c); err != nil {
			return api.Call{}, err
		}
		return c, t.event(KindCallRepeated, toolUseID, r)
	})
}

// maxRepeats bounds how many repeats a call keeps; the audit has them all.
const maxRepeats = 100

// RecordRepeat records that a tool_use_id was proposed again, from which
// session, and what the gate answered; the call is then also listed among
// that session's calls.
func (l *Ledger) RecordRepeat(ctx context.Context, toolUseID, sessionID string, answer api.Verdict) (api.Call, error) {
	return write(ctx, l, func(t *tx) (api.Call, error) {
		c, found, err := getCall(t, toolUseID)
		if err != nil {
			return api.Call{}, err
		}
		if !found {
			return api.Call{}, fmt.Errorf("record repeat of %s: %w", toolUseID, ErrNotFound)
		}
		r := api.Repeat{ProposedAt: t.Now(), SessionID: sessionID, Effect: answer.Effect, ReasonCode: answer.ReasonCode}
		if len(c.Repeats) < maxRepeats {
			c.Repeats = append(c.Repeats, r)
		}
		if err := putCall(t, c); err != nil {
			return api.Call{}, err
		}
		if err := t.Set(sessionCallKey(sessionID, toolUseID), nil); err != nil {
			return api.Call{}, err
		}
		return c, t.event(KindCallRepeated, toolUseID, r)
	})
}

// maxSeen bounds what is kept of the text the model saw for one call.
const maxSeen = 2048

// RecordSeen records what the model saw as the result of a call (from
// PostToolBatch), so that a denied call is complete in the audit too. A
// call the ledger does not know is recorded as seen only in the audit. The
// call keeps the first: a later one is a repeat's (the same tool_use_id
// proposed again, denied duplicate_tool_use_id), in the audit only.
func (l *Ledger) RecordSeen(ctx context.Context, toolUseID, seen string) error {
	if len(seen) > maxSeen {
		seen = seen[:maxSeen] + "…"
	}
	_, err := write(ctx, l, func(t *tx) (struct{}, error) {
		c, found, err := getCall(t, toolUseID)
		if err != nil {
			return struct{}{}, err
		}
		if err := t.event(KindCallSeen, toolUseID, seenEvent{toolUseID, seen}); err != nil {
			return struct{}{}, err
		}
		if found && c.Seen == "" && seen != "" {
			c.Seen = seen
			head, err := t.head()
			if err != nil {
				return struct{}{}, err
			}
			return struct{}{}, putCallSeenAt(t, c, head.Seq)
		}
		return struct{}{}, nil
	})
	return err
}

// seenEvent is the audit's record of what the model saw.
type seenEvent struct {
	ToolUseID string `json:"tool_use_id"`
	Seen      string `json:"seen"`
}
