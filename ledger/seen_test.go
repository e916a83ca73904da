package ledger

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/clip"
)

// roundTrip is s as the ledger stored it inline before seen_at: through
// encoding/json (invalid UTF-8 becomes U+FFFD).
func roundTrip(s string) string {
	raw, _ := json.Marshal(s)
	var out string
	json.Unmarshal(raw, &out)
	return out
}

// seenOf checks that every way of reading call id gives want as what the
// model saw, and that the event its record names (if any) is a call_seen
// event of id holding want.
func seenOf(t *testing.T, l *Ledger, id, want, when string) {
	t.Helper()
	c, err := l.Call(ctx, id)
	if err != nil || c.Seen != want {
		t.Errorf("%s: Call(%s).Seen = %.60q (%v), want %.60q", when, id, c.Seen, err, want)
	}
	calls, err := l.Calls(ctx, CallQuery{})
	if err != nil {
		t.Errorf("%s: Calls: %v", when, err)
	}
	for _, c := range calls {
		if c.ToolUseID == id && c.Seen != want {
			t.Errorf("%s: Calls: %s.Seen = %.60q, want %.60q", when, id, c.Seen, want)
		}
	}
	// In a transaction (getCall).
	got, err := write(ctx, l, func(t *tx) (string, error) {
		c, _, err := getCall(t, id)
		return c.Seen, err
	})
	if err != nil || got != want {
		t.Errorf("%s: getCall(%s).Seen = %.60q (%v), want %.60q", when, id, got, err, want)
	}
	raw, err := l.store.ReadRaw(callKey(id))
	if err != nil {
		t.Fatal(err)
	}
	if at := gjson.GetBytes(raw, "seen_at").Uint(); at != 0 {
		ev, err := l.store.ReadRaw(eventKey(at))
		if err != nil {
			t.Errorf("%s: %s's seen_at %d: %v", when, id, at, err)
			return
		}
		r := gjson.GetManyBytes(ev, "kind", "subject", "data.seen")
		if r[0].Str != KindCallSeen || r[1].Str != id || r[2].String() != want {
			t.Errorf("%s: %s's seen_at %d names %s", when, id, at, ev)
		}
	} else if want != "" && gjson.GetBytes(raw, "seen").String() != want {
		t.Errorf("%s: %s's record holds neither seen_at nor its seen: %s", when, id, raw)
	}
}

// The text the model saw reads back as it did when the record held it:
// HTML characters, U+2028, control characters, and invalid UTF-8 (a rune
// clipped at maxSeen) alike, from the event, from the record after a
// prune, and through RecordOutcomes.
func TestSeenReadsBackAsStored(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	if _, _, err := l.StartSession(ctx, api.Session{ID: "long"}); err != nil {
		t.Fatal(err)
	}
	odd := `<script>a && b</script> "q" \ ` + "\u2028\u2029\x00\x1f\x7f\xff\xfe é 😀 "
	long := odd + strings.Repeat("é", maxSeen) // clipped mid-rune
	seens := map[string]string{"toolu_a": odd, "toolu_b": long, "toolu_c": odd, "toolu_d": long}
	for _, id := range []string{"toolu_a", "toolu_b", "toolu_c", "toolu_d"} {
		recordCall(t, l, id, "long")
	}
	for _, id := range []string{"toolu_a", "toolu_b"} {
		if err := l.RecordSeen(ctx, id, seens[id]); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"toolu_c", "toolu_d"} {
		if _, err := l.RecordOutcomes(ctx, "long", []api.Outcome{{ToolUseID: id, Ran: true, Outcome: "ok", Seen: seens[id]}}); err != nil {
			t.Fatal(err)
		}
	}
	for id, s := range seens {
		seenOf(t, l, id, roundTrip(clip.String(s, maxSeen)), "as recorded")
	}
	c.Add(time.Hour)
	if _, err := l.Prune(ctx, c.Now(), api.Incident{}, Unpublished); err != nil {
		t.Fatal(err)
	}
	for id, s := range seens {
		seenOf(t, l, id, roundTrip(clip.String(s, maxSeen)), "pruned")
	}
}

// The record names the call_seen event of what it keeps, the first one
// with text: not a repeat's, not an empty one, through RecordSeen and
// RecordOutcomes alike, several outcomes of one id in one batch too.
func TestSeenKeepsTheFirst(t *testing.T) {
	l, _ := openTest(t, nil)
	if _, _, err := l.StartSession(ctx, api.Session{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"toolu_1", "toolu_2", "toolu_3"} {
		recordCall(t, l, id, "s1")
	}
	// RecordSeen twice, empty first.
	for _, s := range []string{"", "first", "second"} {
		if err := l.RecordSeen(ctx, "toolu_1", s); err != nil {
			t.Fatal(err)
		}
	}
	seenOf(t, l, "toolu_1", "first", "RecordSeen")
	// Outcomes: not run with nothing seen, then run, then a repeat's denial,
	// in one batch.
	if _, err := l.RecordOutcomes(ctx, "s1", []api.Outcome{
		{ToolUseID: "toolu_2", Ran: false, Seen: ""},
		{ToolUseID: "toolu_2", Ran: true, Outcome: "ok", Seen: "ran", Entry: "e1"},
		{ToolUseID: "toolu_2", Ran: false, Seen: "denied: duplicate", Entry: "e2"},
	}); err != nil {
		t.Fatal(err)
	}
	seenOf(t, l, "toolu_2", "ran", "one batch")
	// Sent again (the same entries): nothing changes.
	if _, err := l.RecordOutcomes(ctx, "s1", []api.Outcome{{ToolUseID: "toolu_2", Ran: true, Outcome: "ok", Seen: "ran again", Entry: "e1"}}); err != nil {
		t.Fatal(err)
	}
	seenOf(t, l, "toolu_2", "ran", "sent again")
	// RecordSeen then outcomes.
	if err := l.RecordSeen(ctx, "toolu_3", "denied by hook"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RecordOutcomes(ctx, "s1", []api.Outcome{{ToolUseID: "toolu_3", Ran: false, Seen: "later"}}); err != nil {
		t.Fatal(err)
	}
	seenOf(t, l, "toolu_3", "denied by hook", "RecordSeen then outcome")
	// A call the ledger does not know, seen; then first proposed by
	// RecordOutcomes (it ran), with what it saw then.
	if err := l.RecordSeen(ctx, "toolu_4", "before proposed"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RecordOutcomes(ctx, "s1", []api.Outcome{
		{ToolUseID: "toolu_4", ToolName: "Bash", Input: json.RawMessage(`{"command":"x"}`), Ran: true, Outcome: "ok", Seen: "x out"},
		{ToolUseID: "toolu_4", Ran: false, Seen: "denied later"},
	}); err != nil {
		t.Fatal(err)
	}
	seenOf(t, l, "toolu_4", "x out", "proposed by RecordOutcomes")
	// Every operation that writes the record over keeps seen_at.
	if _, err := l.RecordRepeat(ctx, "toolu_1", "s1", api.Verdict{Effect: api.EffectDeny, ReasonCode: "duplicate_tool_use_id"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RecordExecution(ctx, "toolu_1", Execution{Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	seenOf(t, l, "toolu_1", "first", "written over")
}

// pruneInSteps runs a prune step by step, as Prune does, stopping after
// the step named stop: the base moves; the calls that stay take from the
// first n call events; the events are deleted.
func pruneInSteps(t *testing.T, l *Ledger, before time.Time, n int) {
	t.Helper()
	rec := startPrune(t, l, before)
	var events []callEvent
	err := l.store.Scan(ctx, eventPrefix, eventPrefix, func(key, val []byte) error {
		seq := eventSeq(key)
		if seq > rec.BaseSeq {
			return errExported
		}
		if r := gjson.GetManyBytes(val, "kind", "subject"); r[0].Str == KindCallProposed || r[0].Str == KindCallSeen {
			events = append(events, callEvent{r[1].Str, seq})
		}
		return nil
	})
	if err != nil && err != errExported {
		t.Fatal(err)
	}
	if err := l.keepFromEvents(ctx, events[:min(n, len(events))]); err != nil {
		t.Fatal(err)
	}
}

// A prune cut short at each step, then run again, and the call_proposed
// and call_seen events of one call pruned by different prunes: the call
// reads with its input and what the model saw all along.
func TestSeenPrunedInSteps(t *testing.T) {
	for n := 0; n <= 4; n++ {
		c := newClock()
		l, _ := openTest(t, c)
		if _, _, err := l.StartSession(ctx, api.Session{ID: "long"}); err != nil {
			t.Fatal(err)
		}
		recordCall(t, l, "toolu_1", "long")
		recordCall(t, l, "toolu_2", "long")
		if err := l.RecordSeen(ctx, "toolu_1", "one"); err != nil {
			t.Fatal(err)
		}
		c.Add(time.Hour)
		cut1 := c.Now()
		c.Add(time.Hour)
		if err := l.RecordSeen(ctx, "toolu_2", "two"); err != nil {
			t.Fatal(err)
		}
		if err := l.RecordSeen(ctx, "toolu_1", "a repeat's"); err != nil {
			t.Fatal(err)
		}
		c.Add(time.Hour)
		cut2 := c.Now()
		c.Add(time.Hour)
		check := func(when string) {
			t.Helper()
			for id, want := range map[string]string{"toolu_1": "one", "toolu_2": "two"} {
				seenOf(t, l, id, want, when)
				if call, err := l.Call(ctx, id); err != nil || string(call.Input) != `{"command":"`+id+`"}` {
					t.Errorf("%s: %s's input: %s %v", when, id, call.Input, err)
				}
			}
		}
		pruneInSteps(t, l, cut1, n)
		check("first prune cut short")
		if _, err := l.Prune(ctx, cut1, api.Incident{}, Unpublished); err != nil {
			t.Fatal(err)
		}
		check("first prune")
		pruneInSteps(t, l, cut2, n)
		check("second prune cut short")
		if _, err := l.Prune(ctx, cut2, api.Incident{}, Unpublished); err != nil {
			t.Fatal(err)
		}
		check("second prune")
		if _, err := l.Compact(ctx); err != nil {
			t.Fatal(err)
		}
		check("compacted")
	}
}

// A record read just before a prune moved what the model saw from its
// event into it and deleted the event: reading it then retries from the
// record as it is now.
func TestSeenPrunedWhileRead(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	if _, _, err := l.StartSession(ctx, api.Session{ID: "long"}); err != nil {
		t.Fatal(err)
	}
	recordCall(t, l, "toolu_1", "long")
	if err := l.RecordSeen(ctx, "toolu_1", "one"); err != nil {
		t.Fatal(err)
	}
	raw, err := l.store.ReadRaw(callKey("toolu_1"))
	if err != nil {
		t.Fatal(err)
	}
	c.Add(time.Hour)
	if _, err := l.Prune(ctx, c.Now(), api.Incident{}, Unpublished); err != nil {
		t.Fatal(err)
	}
	call, err := l.decodeCall(raw)
	if err != nil || call.Seen != "one" || string(call.Input) != `{"command":"toolu_1"}` {
		t.Errorf("read while pruned: %+v %v", call, err)
	}
}

// A record of before seen_at holds what the model saw: it reads, is
// written over, pruned and compacted with it.
func TestSeenLegacyRecord(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	if _, _, err := l.StartSession(ctx, api.Session{ID: "long"}); err != nil {
		t.Fatal(err)
	}
	input := `{"command":"old"}`
	_, err := write(ctx, l, func(t *tx) (struct{}, error) {
		call := api.Call{ToolUseID: "toolu_old", SessionID: "long", ToolName: "Bash", Input: json.RawMessage(input), InputSHA256: InputSHA256("Bash", []byte(input)), ProposedAt: t.Now(), Seen: "<old> seen"}
		raw, _ := json.Marshal(call)
		if err := t.Set(callKey("toolu_old"), raw); err != nil {
			return struct{}{}, err
		}
		if err := t.Set(sessionCallKey("long", "toolu_old"), nil); err != nil {
			return struct{}{}, err
		}
		if err := t.event(KindCallProposed, "toolu_old", marshaled(raw)); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, t.event(KindCallSeen, "toolu_old", seenEvent{"toolu_old", "<old> seen"})
	})
	if err != nil {
		t.Fatal(err)
	}
	seenOf(t, l, "toolu_old", "<old> seen", "legacy")
	if err := l.RecordSeen(ctx, "toolu_old", "a repeat's"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RecordOutcomes(ctx, "long", []api.Outcome{{ToolUseID: "toolu_old", Ran: true, Seen: "ran"}}); err != nil {
		t.Fatal(err)
	}
	seenOf(t, l, "toolu_old", "<old> seen", "legacy written over")
	c.Add(time.Hour)
	if _, err := l.Prune(ctx, c.Now(), api.Incident{}, Unpublished); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	seenOf(t, l, "toolu_old", "<old> seen", "legacy pruned")
}

// Readers while prunes move what calls that stay saw from events into
// their records: every read finds the call whole.
func TestSeenReadersDuringPrunes(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	if _, _, err := l.StartSession(ctx, api.Session{ID: "long"}); err != nil {
		t.Fatal(err)
	}
	const n = 300
	id := func(i int) string {
		return "toolu_" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strconv.Itoa(i)
	}
	var cuts []time.Time
	for i := range n {
		recordCall(t, l, id(i), "long")
		if err := l.RecordSeen(ctx, id(i), "seen "+id(i)); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			c.Add(time.Minute)
			cuts = append(cuts, c.Now())
			c.Add(time.Minute)
		}
	}
	done := make(chan struct{})
	errs := make(chan error, 100)
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := r; ; k++ {
				select {
				case <-done:
					return
				default:
				}
				if r%2 == 0 {
					calls, err := l.Calls(ctx, CallQuery{})
					if err != nil || len(calls) != n {
						errs <- fmt.Errorf("Calls: %d %v", len(calls), err)
						return
					}
					for _, call := range calls {
						if call.Seen != "seen "+call.ToolUseID || string(call.Input) != `{"command":"`+call.ToolUseID+`"}` {
							errs <- fmt.Errorf("Calls: %+v", call)
							return
						}
					}
					continue
				}
				i := k % n
				call, err := l.Call(ctx, id(i))
				if err != nil || call.Seen != "seen "+id(i) || string(call.Input) != `{"command":"`+id(i)+`"}` {
					errs <- fmt.Errorf("Call: %+v %v", call, err)
					return
				}
			}
		}()
	}
	for _, cut := range cuts {
		if _, err := l.Prune(ctx, cut, api.Incident{}, Unpublished); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
