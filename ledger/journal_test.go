package ledger

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// abandon stops l the way a crash leaves it: whatever the journal holds
// stays there (Close would recycle it).
func abandon(t *testing.T, l *Ledger) {
	t.Helper()
	l.mu.Lock()
	l.closed = true
	close(l.ops)
	l.mu.Unlock()
	<-l.done
	if err := l.db.Close(); err != nil {
		t.Fatal(err)
	}
	l.journal.close()
}

// copyBadger copies Badger's files (everything but the journal) from one
// directory to another, replacing what was there.
func copyBadger(t *testing.T, from, to string) {
	t.Helper()
	entries, _ := os.ReadDir(to)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "journal-") {
			os.Remove(filepath.Join(to, e.Name()))
		}
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "journal-") || !e.Type().IsRegular() {
			continue
		}
		src, err := os.Open(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.Create(filepath.Join(to, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			t.Fatal(err)
		}
		src.Close()
		dst.Close()
	}
}

// proposeN proposes the calls from to to.
func proposeN(t *testing.T, l *Ledger, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		mustPropose(t, l, fmt.Sprintf("toolu_%03d", i), fmt.Sprintf(`{"command":"echo %03d","pad":"%s"}`, i, strings.Repeat("x", 300)))
	}
}

// A crash of the machine can take from Badger everything written since its
// last checkpoint: it does not sync. The journal holds every acknowledged
// batch since then, and Open applies them again. The test rewinds Badger's
// files to a checkpoint, as such a crash would, keeping the journal as it
// was written: what an earlier generation left in the recycled journal is
// never applied, and a torn last record ends it.
func TestJournalBringsBackWhatBadgerLost(t *testing.T) {
	for _, tt := range []struct {
		name string
		tear bool // the last record was only half written
		want int
	}{{"whole", false, 80}, {"torn last record", true, 79}} {
		t.Run(tt.name, func(t *testing.T) {
			dir, snapshot := t.TempDir(), t.TempDir()
			l, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			proposeN(t, l, 0, 60)
			if err := l.Close(); err != nil { // a checkpoint: the journal's 60 records are stale now
				t.Fatal(err)
			}
			copyBadger(t, dir, snapshot) // Badger as durable at that checkpoint

			l, err = Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			proposeN(t, l, 60, 80) // acknowledged, in the journal over the stale records
			off := l.journal.off
			path := journalPath(dir, l.journal.gen)
			abandon(t, l)
			if tt.tear {
				f, _ := os.OpenFile(path, os.O_RDWR, 0)
				f.WriteAt([]byte{0xff, 0xff, 0xff}, off-10)
				f.Close()
			}
			copyBadger(t, snapshot, dir) // the crash: Badger lost the last 20

			l, err = Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			calls, err := l.Calls(ctx, CallQuery{})
			if err != nil || len(calls) != tt.want {
				t.Fatalf("%d calls after the crash, want %d: %v", len(calls), tt.want, err)
			}
			for i := 0; i < tt.want; i++ {
				if _, err := l.Call(ctx, fmt.Sprintf("toolu_%03d", i)); err != nil {
					t.Errorf("toolu_%03d: %v", i, err)
				}
			}
			r, err := l.Verify(ctx)
			if err != nil || r.Events != uint64(tt.want) {
				t.Errorf("verify: %+v %v (want %d events)", r, err, tt.want)
			}
			// And the ledger goes on from there.
			proposeN(t, l, tt.want, tt.want+5)
			if r, err := l.Verify(ctx); err != nil || r.Events != uint64(tt.want+5) {
				t.Errorf("verify after more writes: %+v %v", r, err)
			}
		})
	}
}

// A journal that fills up is checkpointed and used again: nothing it held
// is lost, and its records are never applied twice over newer ones.
func TestJournalCheckpoints(t *testing.T) {
	l, dir := openTest(t, nil)
	big := strings.Repeat("y", 200<<10)
	for i := range 60 { // 60 × 200 KB: several times the journal's size
		mustPropose(t, l, fmt.Sprintf("toolu_big_%d", i), `{"command":"`+big+fmt.Sprint(i)+`"}`)
	}
	if l.journal.gen < 2 {
		t.Errorf("no checkpoint after %d MB (generation %d)", 60*200>>10, l.journal.gen)
	}
	gens, _ := journals(dir)
	if len(gens) != 1 || gens[0] != l.journal.gen {
		t.Errorf("journals on disk %v, want just generation %d", gens, l.journal.gen)
	}
	// A record larger than the journal gets a larger journal.
	huge := strings.Repeat("z", journalSize)
	mustPropose(t, l, "toolu_huge", `{"command":"`+huge+`"}`)
	if c, err := l.Call(ctx, "toolu_huge"); err != nil || len(c.Input) < journalSize {
		t.Fatalf("the huge call: %v", err)
	}
	if _, err := l.Verify(ctx); err != nil {
		t.Error(err)
	}
}

// A recycled journal still holds an earlier generation's records; where a
// new record ends exactly where a stale one begins, only the generation
// tells them apart.
func TestReadJournalStopsAtAnotherGeneration(t *testing.T) {
	dir := t.TempDir()
	j, err := createJournal(dir, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	for _, v := range []string{"a1", "a2", "a3"} {
		if err := j.append(j.encode([]change{{key: []byte("k"), val: []byte(v)}})); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.recycle(2); err != nil {
		t.Fatal(err)
	}
	if err := j.append(j.encode([]change{{key: []byte("k"), val: []byte("b1")}})); err != nil {
		t.Fatal(err)
	}
	batches, err := readJournal(journalPath(dir, 2), 2)
	if err != nil || len(batches) != 1 || string(batches[0][0].val) != "b1" {
		t.Fatalf("read %d batches (%v), want generation 2's one", len(batches), err)
	}
	if stale, _ := readJournal(journalPath(dir, 2), 1); len(stale) != 0 {
		t.Errorf("generation 1 read from a file that starts with generation 2: %d batches", len(stale))
	}
}
