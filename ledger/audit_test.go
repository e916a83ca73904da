package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/ledger/internal/store"
)

// fill writes n proposals and returns the ledger.
func fill(t testing.TB, n int) *Ledger {
	t.Helper()
	l, _ := openTest(t, nil)
	for i := range n {
		mustPropose(t, l, fmt.Sprintf("toolu_%d", i), fmt.Sprintf(`{"n":%d}`, i))
	}
	return l
}

func chainError(t *testing.T, err error) *api.ChainError {
	t.Helper()
	var ce *api.ChainError
	if !errors.As(err, &ce) {
		t.Fatalf("want a *ChainError, got %v", err)
	}
	return ce
}

// rawSet and rawDelete tamper with the store underneath the ledger.
func rawSet(t *testing.T, l *Ledger, key string, val []byte) {
	if _, err := store.Write(ctx, l.store, func(tx *store.Tx) (struct{}, error) { return struct{}{}, tx.Set(key, val) }); err != nil {
		t.Fatal(err)
	}
}

func rawGet(t *testing.T, l *Ledger, key string) []byte {
	out, err := l.store.ReadRaw(key)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func rawDelete(t *testing.T, l *Ledger, key string) {
	if _, err := store.Write(ctx, l.store, func(tx *store.Tx) (struct{}, error) { return struct{}{}, tx.Delete(key) }); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyIntactChain(t *testing.T) {
	l := fill(t, 10)
	res, err := l.Verify(ctx)
	if err != nil || res.Events != 10 || len(res.Head) != 64 {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestVerifyFindsTheFirstBrokenLink(t *testing.T) {
	tests := []struct {
		name    string
		tamper  func(t *testing.T, l *Ledger)
		seq     uint64
		problem string
	}{
		{"modified data", func(t *testing.T, l *Ledger) {
			raw := rawGet(t, l, eventKey(4))
			rawSet(t, l, eventKey(4), bytes.Replace(raw, []byte(`"n":3`), []byte(`"n":9`), 1))
		}, 4, "modified"},
		{"modified kind", func(t *testing.T, l *Ledger) {
			raw := rawGet(t, l, eventKey(6))
			rawSet(t, l, eventKey(6), bytes.Replace(raw, []byte(`call_proposed`), []byte(`call_executed`), 1))
		}, 6, "modified"},
		{"rehashed, linked to the event before", func(t *testing.T, l *Ledger) {
			// Events are stored without prev_hash (the hash of the one
			// before): an event rehashed whole leaves the next one's hash
			// wrong.
			var e Event
			json.Unmarshal(rawGet(t, l, eventKey(5)), &e)
			e.PrevHash = gjsonHash(rawGet(t, l, eventKey(4)))
			e.Subject = "forged"
			e.Hash = e.Sum()
			rawSet(t, l, eventKey(5), e.encodeStored())
		}, 6, "modified"},
		{"rehashed with a prev_hash of its own", func(t *testing.T, l *Ledger) {
			var e Event
			json.Unmarshal(rawGet(t, l, eventKey(5)), &e)
			e.Subject = "forged"
			e.PrevHash = strings.Repeat("0", 64)
			e.Hash = e.Sum()
			b, _ := json.Marshal(e)
			rawSet(t, l, eventKey(5), b)
		}, 5, "broken_link"},
		{"deleted", func(t *testing.T, l *Ledger) { rawDelete(t, l, eventKey(3)) }, 3, "missing"},
		{"reordered", func(t *testing.T, l *Ledger) {
			a, b := rawGet(t, l, eventKey(7)), rawGet(t, l, eventKey(8))
			rawSet(t, l, eventKey(7), b)
			rawSet(t, l, eventKey(8), a)
		}, 7, "out_of_order"},
		{"tail cut off", func(t *testing.T, l *Ledger) { rawDelete(t, l, eventKey(10)) }, 10, "truncated"},
		{"not JSON", func(t *testing.T, l *Ledger) { rawSet(t, l, eventKey(2), []byte("{")) }, 2, "modified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := fill(t, 10)
			tt.tamper(t, l)
			_, err := l.Verify(ctx)
			ce := chainError(t, err)
			if ce.Seq != tt.seq || ce.Problem != tt.problem {
				t.Errorf("got %v, want event %d %s", ce, tt.seq, tt.problem)
			}
		})
	}
}

func TestExportAndVerifyExport(t *testing.T) {
	l := fill(t, 5)
	var buf bytes.Buffer
	if err := l.Export(ctx, &buf, api.Incident{PID: 42}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[5], `{"export":{"event":6,"head_seq":5,`) {
		t.Fatalf("%d lines, the last %s", len(lines), lines[len(lines)-1])
	}
	res, trailer, err := VerifyExport(strings.NewReader(buf.String()))
	if err != nil || res.Events != 5 || trailer == nil || trailer.Event != 6 || trailer.ByPID != 42 {
		t.Fatalf("%+v %+v %v", res, trailer, err)
	}
	recorded, err := l.Event(ctx, 6)
	if err != nil || recorded.Kind != KindAuditExported {
		t.Fatalf("the export's record: %+v %v", recorded, err)
	}
	if err := CheckExport(res, trailer, recorded); err != nil {
		t.Errorf("a fresh export against its record: %v", err)
	}
	swapped := append([]string{}, lines...)
	swapped[1], swapped[2] = swapped[2], swapped[1]
	_, _, err = VerifyExport(strings.NewReader(strings.Join(swapped, "\n")))
	if ce := chainError(t, err); ce.Seq != 2 {
		t.Errorf("reordered export: %v", ce)
	}
	edited := strings.Replace(buf.String(), `"n":4`, `"n":5`, 1)
	_, _, err = VerifyExport(strings.NewReader(edited))
	if ce := chainError(t, err); ce.Seq != 5 || ce.Problem != "modified" {
		t.Errorf("edited export: %v", ce)
	}
}

// An export's chain may be whole and still lie: cut short (and its last
// line put back, or dropped), or rewritten and hashed again. Its own chain
// cannot tell; the ledger's record of the export can.
func TestCheckExportAgainstTheLedger(t *testing.T) {
	l := fill(t, 5)
	var buf bytes.Buffer
	if err := l.Export(ctx, &buf, api.Incident{}); err != nil {
		t.Fatal(err)
	}
	recorded, _ := l.Event(ctx, 6)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	check := func(text string) error {
		res, trailer, err := VerifyExport(strings.NewReader(text))
		if err != nil {
			return err
		}
		return CheckExport(res, trailer, recorded)
	}
	cut := strings.Join(append(append([]string{}, lines[:3]...), lines[5]), "\n")
	if ce := chainError(t, check(cut)); ce.Problem != "truncated" {
		t.Errorf("a cut tail with the last line kept: %v", ce)
	}
	if ce := chainError(t, check(strings.Join(lines[:3], "\n"))); ce.Problem != "unanchored" {
		t.Errorf("a cut tail without the last line: %v", ce)
	}
	// Rewrite every event (n -> n+100) and hash the chain again, as an
	// attacker who knows the format can.
	var out []string
	var prev string
	for _, line := range lines[:5] {
		var e Event
		json.Unmarshal([]byte(line), &e)
		e.Data = json.RawMessage(strings.Replace(string(e.Data), `"n":`, `"n":10`, 1))
		e.PrevHash = prev
		e.Hash = e.Sum()
		prev = e.Hash
		b, _ := json.Marshal(e)
		out = append(out, string(b))
	}
	trailer := strings.Replace(lines[5], recorded.Subject, recorded.Subject, 1)
	var tr api.ExportTrailer
	json.Unmarshal([]byte(trailer), &tr)
	tr.Export.HeadHash = prev
	b, _ := json.Marshal(tr)
	if ce := chainError(t, check(strings.Join(append(out, string(b)), "\n"))); ce.Problem != "rewritten" {
		t.Errorf("a chain rewritten and hashed again: %v", ce)
	}
	if ce := chainError(t, CheckExport(api.VerifyResult{Events: 5}, &api.Exported{Event: 3}, Event{Seq: 3, Kind: KindCallProposed})); ce.Problem != "unanchored" {
		t.Errorf("a last line naming an event that is no export: %v", ce)
	}
}

// TestGroupCommitKeepsTheChain has many writers share transactions; the
// chain must still be one unbroken sequence with every write in it.
func TestGroupCommitKeepsTheChain(t *testing.T) {
	l, _ := openTest(t, nil)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				id := fmt.Sprintf("toolu_%d_%d", w, i)
				if _, _, err := l.Propose(ctx, api.Call{ToolUseID: id, SessionID: "s", ToolName: "T", Input: json.RawMessage(`{}`)}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	res, err := l.Verify(ctx)
	if err != nil || res.Events != 800 {
		t.Fatalf("%+v %v", res, err)
	}
	if calls, _ := l.Calls(ctx, CallQuery{}); len(calls) != 800 {
		t.Errorf("%d calls", len(calls))
	}
}

// An event is exported as json.Marshal would write it, and stored so
// without its prev_hash, without encoding/json scanning its data again.
func TestEventEncoding(t *testing.T) {
	data, _ := json.Marshal(map[string]any{"input": map[string]string{"command": "echo <&> \u00e9\n"}})
	for _, e := range []Event{
		{Seq: 1, Time: time.Date(2026, 12, 1, 9, 0, 0, 123456789, time.UTC), Kind: KindCallProposed, Subject: "toolu_1",
			Data: data, PrevHash: "", Hash: "ab"},
		{Seq: 1 << 40, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), Kind: "k\"<>&", Subject: "s\u2028\\",
			Data: json.RawMessage(`"x"`), PrevHash: "00", Hash: "ff"},
	} {
		want, _ := json.Marshal(e)
		if got := e.encode(); string(got) != string(want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
		stored := struct {
			Seq     uint64          `json:"seq"`
			Time    time.Time       `json:"time"`
			Kind    string          `json:"kind"`
			Subject string          `json:"subject"`
			Data    json.RawMessage `json:"data"`
			Hash    string          `json:"hash"`
		}{e.Seq, e.Time, e.Kind, e.Subject, e.Data, e.Hash}
		want, _ = json.Marshal(stored)
		if got := e.encodeStored(); string(got) != string(want) {
			t.Errorf("stored: got  %s\nwant %s", got, want)
		}
	}
}

// The first events deleted from a ledger never read as a prune: a pruned
// chain starts where the ledger's base says.
func TestVerifyFirstEventsDeleted(t *testing.T) {
	l := fill(t, 5)
	rawDelete(t, l, eventKey(1))
	if ce := chainError(t, func() error { _, err := l.Verify(ctx); return err }()); ce.Seq != 1 || ce.Problem != "missing" {
		t.Errorf("got %v, want event 1 missing", ce)
	}
}

// appendString writes what json.Marshal does, on its fast path and off it.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "call_proposed", "toolu_01ABC", "3f9a", "a\"b", `a\b`, "<&>", "\x00\x1f\x7f", "é", "\u2028", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("appendString(%q) = %s, want x%s", s, got, want)
		}
	})
}

// A call that could not be made durable (its batch's checkpoint failed:
// here the journal could not take its next generation's name) must not
// leave the audit chain's head it advanced behind: a later call chained
// on the lost event would break the chain for good.
func TestAChainAfterAFailedCheckpointVerifies(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.StartSession(ctx, api.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	gens, _ := filepath.Glob(filepath.Join(dir, "journal-*.wal"))
	if len(gens) != 1 {
		t.Fatalf("journals %v", gens)
	}
	var gen int
	fmt.Sscanf(filepath.Base(gens[0]), "journal-%d.wal", &gen)
	block := filepath.Join(dir, fmt.Sprintf("journal-%d.wal", gen+1))
	if err := os.Mkdir(block, 0o700); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("p", 256<<10)
	failed := -1
	for i := 0; i < 100 && failed < 0; i++ {
		c := api.Call{ToolUseID: fmt.Sprintf("toolu_%d", i), SessionID: "s", ToolName: "Bash",
			Input: json.RawMessage(fmt.Sprintf(`{"command":"echo %d","pad":"%s"}`, i, pad))}
		if _, _, err := l.Propose(ctx, c); err != nil {
			failed = i
			t.Logf("call %d failed: %v", i, err)
		}
	}
	if failed < 0 {
		t.Fatal("no checkpoint failed")
	}
	os.Remove(block) // a transient failure
	c := api.Call{ToolUseID: "toolu_after", SessionID: "s", ToolName: "Bash", Input: json.RawMessage(`{"command":"true"}`)}
	_, _, perr := l.Propose(ctx, c)
	res, err := l.Verify(ctx)
	if err != nil || !res.Valid {
		t.Errorf("the call after the failed one: %v; the audit chain: %+v %v", perr, res, err)
	}
	// Opened again (the restart the stopped ledger asks for), it goes on.
	l.Close()
	if l, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, _, err := l.Propose(ctx, c); err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	if res, err := l.Verify(ctx); err != nil || !res.Valid {
		t.Errorf("after a restart, the audit chain: %+v %v", res, err)
	}
}

// A file cut exactly at an earlier export's head, followed by that
// export's (genuine) last line, is byte for byte that earlier export, and
// verifies as such: verify names the export it is (--json: export.event,
// exported_at, by_pid, by_exe), and a run report's anchor after it
// (--anchor) finds it short. The daemon makes exports for
// people only (a gated session's process is refused), so that no export
// is the model's to cut a later one back to.
func TestCutExportVerifiesAsTheEarlierExport(t *testing.T) {
	l := fill(t, 3)
	var early bytes.Buffer // an export, before the calls
	if err := l.Export(ctx, &early, api.Incident{PID: 4242}); err != nil {
		t.Fatal(err)
	}
	for i := 3; i < 8; i++ {
		mustPropose(t, l, fmt.Sprintf("toolu_late_%d", i), `{"n":1}`)
	}
	var late bytes.Buffer // the person's export, of everything
	if err := l.Export(ctx, &late, api.Incident{PID: 1}); err != nil {
		t.Fatal(err)
	}
	earlyLines := strings.Split(strings.TrimSpace(early.String()), "\n")
	lateLines := strings.Split(strings.TrimSpace(late.String()), "\n")
	forged := strings.Join(append(append([]string{}, lateLines[:3]...), earlyLines[len(earlyLines)-1]), "\n")
	res, trailer, err := VerifyExport(strings.NewReader(forged))
	if err != nil {
		t.Fatalf("the file's own chain: %v", err)
	}
	recorded, err := l.Event(ctx, trailer.Event)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckExport(res, trailer, recorded); err != nil {
		t.Fatalf("the earlier export, as the cut file now is: %v", err)
	}
	if trailer.ByPID != 4242 || trailer.HeadSeq != res.Events {
		t.Errorf("verify does not say which export the file is: %+v", trailer)
	}
	_, lateTrailer, _ := VerifyExport(strings.NewReader(late.String()))
	events := func(seq uint64) (string, error) { return "", nil } // the cut file holds no event after the early head
	_ = events
	if lateTrailer.HeadSeq <= res.Events {
		t.Errorf("the person's export ends at %d, the cut one at %d: an anchor at the later head finds it short", lateTrailer.HeadSeq, res.Events)
	}
}
