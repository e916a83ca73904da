package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
)

// A prune removes the events recorded before the date and the sessions
// that ended before it, with their calls; the chain that remains verifies
// from its base, which an export names, and the prune is in the chain.
func TestPrune(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	session := func(id string, calls int) {
		if _, _, err := l.StartSession(ctx, api.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
		for i := range calls {
			call := api.Call{ToolUseID: fmt.Sprintf("toolu_%s_%d", id, i), SessionID: id, ToolName: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}
			if _, _, err := l.Record(ctx, call, api.Verdict{Effect: api.EffectAllow, Source: api.SourcePolicy}, true); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := l.EndSession(ctx, id, api.EndEnded); err != nil {
			t.Fatal(err)
		}
		c.Add(time.Hour)
	}
	session("old", 3)
	cut := c.Now()
	session("new", 2)
	before, _ := l.Verify(ctx)
	rec, err := l.Prune(ctx, cut, api.Incident{PID: 42, Exe: "/bin/toolgate"}, Unpublished)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Sessions != 1 || rec.Calls != 3 || rec.Events == 0 || rec.BaseSeq != rec.Events || len(rec.BaseHash) != 64 || rec.Event != before.HeadSeq+1 {
		t.Fatalf("prune %+v (chain before %+v)", rec, before)
	}
	if _, err := l.Call(ctx, "toolu_old_0"); err == nil {
		t.Error("a call of a pruned session is still there")
	}
	if calls, err := l.Calls(ctx, CallQuery{SessionID: "new"}); err != nil || len(calls) != 2 {
		t.Errorf("the calls of the session that stays: %d %v", len(calls), err)
	}
	if _, err := l.Session(ctx, "old"); err == nil {
		t.Error("the pruned session is still there")
	}
	res, err := l.Verify(ctx)
	if err != nil || res.Base != rec.BaseSeq || res.HeadSeq != rec.Event || res.Events != rec.Event-rec.BaseSeq {
		t.Fatalf("verify after the prune: %+v %v", res, err)
	}
	if _, err := l.Event(ctx, rec.BaseSeq); err == nil {
		t.Error("a pruned event is still readable")
	}
	e, err := l.Event(ctx, rec.BaseSeq+1)
	if err != nil || e.PrevHash != rec.BaseHash {
		t.Errorf("the first event after the base: %+v %v", e, err)
	}
	// An export holds the chain from the base, and says so.
	var buf bytes.Buffer
	if err := l.Export(ctx, &buf, api.Incident{}); err != nil {
		t.Fatal(err)
	}
	vres, trailer, err := VerifyExport(bytes.NewReader(buf.Bytes()))
	if err != nil || vres.Base != rec.BaseSeq || trailer == nil || trailer.BaseSeq != rec.BaseSeq || trailer.BaseHash != rec.BaseHash {
		t.Fatalf("the export: %+v %+v %v", vres, trailer, err)
	}
	recorded, _ := l.Event(ctx, trailer.Event)
	if err := CheckExport(vres, trailer, recorded); err != nil {
		t.Errorf("the export against the ledger: %v", err)
	}
	// The export with its first events cut is not the export the ledger
	// recorded.
	lines := bytes.SplitAfter(buf.Bytes(), []byte("\n"))
	cutRes, _, err := VerifyExport(bytes.NewReader(bytes.Join(append(lines[2:], nil), nil)))
	if err == nil {
		err = CheckExport(cutRes, trailer, recorded)
	}
	if ce := chainError(t, err); ce.Problem != "truncated" {
		t.Errorf("an export cut at its head: %v", ce)
	}
	// The prune is in the chain, and a second prune goes on from the base.
	if kinds := eventKinds(t, l); kinds[len(kinds)-2] != KindAuditPruned {
		t.Errorf("audit: %v", kinds)
	}
	c.Add(time.Hour)
	again, err := l.Prune(ctx, c.Now(), api.Incident{}, Unpublished)
	if err != nil || again.Sessions != 1 || again.Calls != 2 || again.BaseSeq <= rec.BaseSeq {
		t.Errorf("a second prune: %+v %v", again, err)
	}
	if res, err := l.Verify(ctx); err != nil || res.Base != again.BaseSeq {
		t.Errorf("verify after the second prune: %+v %v", res, err)
	}
}

// In a fleet the chain is the outbox: a prune keeps every event after the
// last one Postgres holds, whatever its date, and EventsAfter gives the
// publisher the events that remain with the prev_hash that links them
// (the ledger stores an event without it), from the base on.
func TestPruneKeepsWhatIsNotPublished(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	for _, id := range []string{"a", "b", "c"} {
		if _, _, err := l.StartSession(ctx, api.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := l.EndSession(ctx, id, api.EndEnded); err != nil {
			t.Fatal(err)
		}
		c.Add(time.Hour)
	}
	all, err := l.EventsAfter(ctx, 0, 1000)
	if err != nil || len(all) < 4 {
		t.Fatalf("events: %d %v", len(all), err)
	}
	published := all[1].Seq // Postgres holds the first two events only
	rec, err := l.Prune(ctx, c.Now(), api.Incident{}, published)
	if err != nil {
		t.Fatal(err)
	}
	if rec.BaseSeq != published || rec.Sessions != 3 {
		t.Fatalf("prune up to the published event %d: %+v", published, rec)
	}
	if _, err := l.EventsAfter(ctx, published-1, 10); err == nil {
		t.Error("events after a pruned one: no error")
	}
	rest, err := l.EventsAfter(ctx, published, 1000)
	if err != nil || len(rest) != len(all)-2+1 { // the unpublished ones and the prune
		t.Fatalf("the events the publisher still needs: %d %v", len(rest), err)
	}
	for i, e := range rest[:len(all)-2] {
		want := all[i+2]
		if e.Seq != want.Seq || e.Hash != want.Hash || e.PrevHash != want.PrevHash || e.PrevHash == "" {
			t.Errorf("event %d after the prune: %+v, want %+v", e.Seq, e, want)
		}
	}
	if last := rest[len(rest)-1]; last.Kind != KindAuditPruned || last.PrevHash != all[len(all)-1].Hash || last.Sum() != last.Hash {
		t.Errorf("the prune's event: %+v", last)
	}
	// Nothing published: no event goes, the sessions do.
	c.Add(time.Hour)
	none, err := l.Prune(ctx, c.Now(), api.Incident{}, published)
	if err != nil || none.BaseSeq != published || none.Events != 0 {
		t.Errorf("a second prune with nothing more published: %+v %v", none, err)
	}
}

// A session that deferred a call (--on-ask defer) waits for toolgate
// resume however old it is: a prune leaves it, its call and its approval.
func TestPruneKeepsDeferredSessions(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	if _, _, err := l.StartSession(ctx, api.Session{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	a := ask(t, l, "toolu_1", 30*24*time.Hour)
	if ok, err := l.Defer(ctx, "s1", "toolu_1", "claude-sid"); !ok || err != nil {
		t.Fatalf("defer: %v %v", ok, err)
	}
	if _, _, err := l.EndSession(ctx, "s1", api.EndEnded); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Hour)
	rec, err := l.Prune(ctx, c.Now(), api.Incident{}, Unpublished)
	if err != nil || rec.Sessions != 0 || rec.Calls != 0 {
		t.Fatalf("prune: %+v %v", rec, err)
	}
	if s, err := l.Session(ctx, "s1"); err != nil || s.EndReason != api.EndDeferred {
		t.Errorf("the deferred session: %+v %v", s, err)
	}
	if got, err := l.Approval(ctx, a.ID); err != nil || got.Status != api.StatusPending {
		t.Errorf("its approval: %+v %v", got, err)
	}
	if _, err := l.ResumeSession(ctx, "s1", func(*api.Session) {}); err != nil {
		t.Errorf("resume after the prune: %v", err)
	}
}

// A session that began before the date and ended after it stays, and so
// do its calls: their call_proposed and call_seen events are pruned, and
// each call keeps the input and what the model saw that its events held,
// through a reopen and a compaction too.
func TestPruneKeepsTheInputOfACallThatStays(t *testing.T) {
	c := newClock()
	l, dir := openTest(t, c)
	if _, _, err := l.StartSession(ctx, api.Session{ID: "long"}); err != nil {
		t.Fatal(err)
	}
	input := func(i int) string { return fmt.Sprintf(`{"command":"make test-%d"}`, i) }
	for i := range 3 {
		call := api.Call{ToolUseID: fmt.Sprintf("toolu_%d", i), SessionID: "long", ToolName: "Bash", Input: json.RawMessage(input(i))}
		if _, _, err := l.Record(ctx, call, api.Verdict{Effect: api.EffectAllow, Source: api.SourcePolicy}, true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.RecordOutcomes(ctx, "long", []api.Outcome{{ToolUseID: "toolu_2", Ran: true, Outcome: "ok", Seen: "seen before"}}); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Hour)
	cut := c.Now()
	c.Add(time.Hour)
	if _, err := l.RecordExecution(ctx, "toolu_0", Execution{Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.EndSession(ctx, "long", api.EndEnded); err != nil {
		t.Fatal(err)
	}
	rec, err := l.Prune(ctx, cut, api.Incident{}, Unpublished)
	if err != nil || rec.Sessions != 0 || rec.Events == 0 {
		t.Fatalf("prune: %+v %v", rec, err)
	}
	check := func(when string) {
		t.Helper()
		calls, err := l.Calls(ctx, CallQuery{SessionID: "long"})
		if err != nil || len(calls) != 3 {
			t.Fatalf("%s: the calls: %d %v", when, len(calls), err)
		}
		for i, call := range calls {
			if string(call.Input) != input(i) {
				t.Errorf("%s: %s's input: %s, want %s", when, call.ToolUseID, call.Input, input(i))
			}
		}
		if calls[2].Seen != "seen before" {
			t.Errorf("%s: what the model saw of %s: %q", when, calls[2].ToolUseID, calls[2].Seen)
		}
		if res, err := l.Verify(ctx); err != nil || !res.Valid {
			t.Errorf("%s: verify: %+v %v", when, res, err)
		}
	}
	check("after the prune")
	l.Close()
	if l, err = Open(dir, Options{Now: c.Now}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if _, err := l.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	check("reopened and compacted")
	if err := l.RecordSeen(ctx, "toolu_1", "built"); err != nil {
		t.Fatal(err)
	}
	check("written over")
}

// History gives every call once, as proposed: those whose call_proposed
// event a prune removed from their records, those recorded before the
// input was stored once (their records hold it, and so do their events),
// and the others from their events.
func TestHistoryOfAPrunedLedger(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	if _, _, err := l.StartSession(ctx, api.Session{ID: "long"}); err != nil {
		t.Fatal(err)
	}
	propose := func(id string) {
		call := api.Call{ToolUseID: id, SessionID: "long", ToolName: "Bash", Input: json.RawMessage(`{"command":"` + id + `"}`)}
		if _, _, err := l.Record(ctx, call, api.Verdict{Effect: api.EffectAllow, Source: api.SourcePolicy}, true); err != nil {
			t.Fatal(err)
		}
	}
	propose("toolu_pruned")
	c.Add(time.Hour)
	cut := c.Now()
	propose("toolu_earlier_shape")
	// As a record was stored before 2026-12-02: its input in it.
	_, err := write(ctx, l, func(t *tx) (struct{}, error) {
		call, _, err := getCall(t, "toolu_earlier_shape")
		if err != nil {
			return struct{}{}, err
		}
		return struct{}{}, t.Put(callKey(call.ToolUseID), storedCall{Call: call})
	})
	if err != nil {
		t.Fatal(err)
	}
	propose("toolu_after")
	if _, err := l.Prune(ctx, cut, api.Incident{}, Unpublished); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	err = l.History(ctx, time.Time{}, time.Time{}, func(h api.HistoryItem) error {
		if h.Call != nil {
			if _, again := got[h.Call.ToolUseID]; again {
				t.Errorf("%s came twice", h.Call.ToolUseID)
			}
			got[h.Call.ToolUseID] = string(h.Call.Input)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"toolu_pruned", "toolu_earlier_shape", "toolu_after"} {
		if got[id] != `{"command":"`+id+`"}` {
			t.Errorf("%s: %q", id, got[id])
		}
	}
	if len(got) != 3 {
		t.Errorf("history: %v", got)
	}
}

// A call read (its record) just before a prune removed it with its
// session, and then its call_proposed event: reading its input then
// finds neither. That is a call not found, said in the domain's words,
// not the store's key; and Calls, listing while a prune runs, leaves
// the call out instead of failing.
func TestCallPrunedWhileRead(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	if _, _, err := l.StartSession(ctx, api.Session{ID: "old"}); err != nil {
		t.Fatal(err)
	}
	recordCall(t, l, "toolu_old", "old")
	if _, _, err := l.EndSession(ctx, "old", api.EndEnded); err != nil {
		t.Fatal(err)
	}
	raw, err := l.store.ReadRaw(callKey("toolu_old")) // as Calls' scan read it
	if err != nil {
		t.Fatal(err)
	}
	c.Add(time.Hour)
	if _, err := l.Prune(ctx, c.Now(), api.Incident{}, Unpublished); err != nil {
		t.Fatal(err)
	}
	_, err = l.decodeCall(raw)
	if !errors.Is(err, ErrNotFound) || strings.Contains(err.Error(), "c/") {
		t.Errorf("reading a call pruned meanwhile: %v", err)
	}
}

// A call repeated from another session (RecordRepeat lists it among that
// session's calls) is pruned with its own session: the other session's
// calls still list, without it.
func TestCallsOfASessionThatRepeatedAPrunedCall(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	for _, id := range []string{"s1", "s2"} {
		if _, _, err := l.StartSession(ctx, api.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	recordCall(t, l, "toolu_x", "s1")
	recordCall(t, l, "toolu_y", "s2")
	if _, err := l.RecordRepeat(ctx, "toolu_x", "s2", api.Verdict{Effect: api.EffectDeny, ReasonCode: "duplicate_tool_use_id"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.EndSession(ctx, "s1", api.EndEnded); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Hour)
	if _, err := l.Prune(ctx, c.Now(), api.Incident{}, Unpublished); err != nil {
		t.Fatal(err)
	}
	calls, err := l.Calls(ctx, CallQuery{SessionID: "s2"})
	if err != nil || len(calls) != 1 || calls[0].ToolUseID != "toolu_y" {
		t.Errorf("s2's calls: %+v %v", calls, err)
	}
}

// historyInputs runs History and returns each call's input by
// tool_use_id, failing on a call that comes twice.
func historyInputs(t *testing.T, l *Ledger) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := l.History(ctx, time.Time{}, time.Time{}, func(h api.HistoryItem) error {
		if h.Call != nil {
			if _, again := got[h.Call.ToolUseID]; again {
				t.Errorf("history: %s came twice", h.Call.ToolUseID)
			}
			got[h.Call.ToolUseID] = string(h.Call.Input)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	return got
}

// startPrune is Prune's first durable step (the base moves, audit_pruned
// is recorded) and nothing after it: a prune the process died in.
func startPrune(t *testing.T, l *Ledger, before time.Time) api.Pruned {
	t.Helper()
	base, err := l.readBase()
	if err != nil {
		t.Fatal(err)
	}
	first, err := l.firstEventAt(ctx, base, before)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := write(ctx, l, func(t *tx) (api.Pruned, error) { return recordPrune(t, before, base, first, 0, 0, api.Incident{}) })
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// A prune that died after moving the chain's base, before the calls that
// stay took their inputs from the call_proposed events behind it: every
// call still reads (Call, Calls), and History gives them all too.
func TestHistoryAfterAPruneCutShort(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	if _, _, err := l.StartSession(ctx, api.Session{ID: "long"}); err != nil {
		t.Fatal(err)
	}
	recordCall(t, l, "toolu_early", "long")
	c.Add(time.Hour)
	cut := c.Now()
	c.Add(time.Hour)
	recordCall(t, l, "toolu_late", "long")
	rec := startPrune(t, l, cut)
	if rec.BaseSeq == 0 {
		t.Fatalf("the base did not move: %+v", rec)
	}
	if call, err := l.Call(ctx, "toolu_early"); err != nil || string(call.Input) != `{"command":"toolu_early"}` {
		t.Fatalf("Call: %+v %v", call, err)
	}
	got := historyInputs(t, l)
	for _, id := range []string{"toolu_early", "toolu_late"} {
		if got[id] != `{"command":"`+id+`"}` {
			t.Errorf("history after a prune cut short: %s: %q (all: %v)", id, got[id], got)
		}
	}
	// Run again, the prune finishes, and History still has both.
	if _, err := l.Prune(ctx, cut, api.Incident{}, Unpublished); err != nil {
		t.Fatal(err)
	}
	got = historyInputs(t, l)
	if len(got) != 2 || got["toolu_early"] != `{"command":"toolu_early"}` {
		t.Errorf("history after the prune ran again: %v", got)
	}
}

// In a fleet a prune keeps the events not yet published, whatever their
// date, and removes the sessions that ended before the date with their
// calls. History gives the calls the ledger holds: not one whose record
// the prune removed, and a tool_use_id proposed again after its record was
// pruned once, with the input it has now.
func TestHistoryAfterAFleetPrune(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	if _, _, err := l.StartSession(ctx, api.Session{ID: "old"}); err != nil {
		t.Fatal(err)
	}
	recordCall(t, l, "toolu_gone", "old")
	recordCall(t, l, "toolu_again", "old")
	if _, _, err := l.EndSession(ctx, "old", api.EndEnded); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Hour)
	head, _ := l.Head()
	// Postgres holds nothing yet: every event stays, the session goes.
	rec, err := l.Prune(ctx, c.Now(), api.Incident{}, 0)
	if err != nil || rec.Sessions != 1 || rec.BaseSeq != 0 {
		t.Fatalf("prune: %+v %v (head %d)", rec, err, head.Seq)
	}
	if _, err := l.Call(ctx, "toolu_gone"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a pruned call: %v", err)
	}
	if _, _, err := l.StartSession(ctx, api.Session{ID: "new"}); err != nil {
		t.Fatal(err)
	}
	again := api.Call{ToolUseID: "toolu_again", SessionID: "new", ToolName: "Bash", Input: json.RawMessage(`{"command":"other"}`)}
	if _, _, err := l.Record(ctx, again, api.Verdict{Effect: api.EffectAllow, Source: api.SourcePolicy}, true); err != nil {
		t.Fatal(err)
	}
	calls, err := l.Calls(ctx, CallQuery{})
	if err != nil || len(calls) != 1 {
		t.Fatalf("Calls: %+v %v", calls, err)
	}
	got := historyInputs(t, l)
	if len(got) != 1 || got["toolu_again"] != `{"command":"other"}` {
		t.Errorf("history: %v, want only toolu_again as proposed again", got)
	}
}
