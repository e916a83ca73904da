package store

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4/skl"
)

var ctx = context.Background()

// abandon stops s the way a crash leaves it: whatever the journal holds
// stays there (Close would recycle it).
func abandon(t *testing.T, s *Store) {
	t.Helper()
	s.mu.Lock()
	s.closed = true
	close(s.ops)
	s.mu.Unlock()
	<-s.done
	if err := s.db().Close(); err != nil {
		t.Fatal(err)
	}
	s.journal.close()
}

func openTest(t testing.TB) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

// put writes one key (and "last", the number of the last key written, as
// a ledger writes its chain's head) in one operation.
func put(t testing.TB, s *Store, i int, value string) {
	t.Helper()
	_, err := Write(ctx, s, func(tx *Tx) (struct{}, error) {
		if err := tx.Put(fmt.Sprintf("k/%03d", i), value); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, tx.Put("last", i)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// count is how many keys k/ hold, and what "last" says.
func count(t testing.TB, s *Store) (n, last int) {
	t.Helper()
	if err := s.Scan(ctx, "k/", "k/", func(_, _ []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Read("last", &last); err != nil {
		t.Fatal(err)
	}
	return n, last
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

// putN writes the keys from to to, one operation each.
func putN(t *testing.T, s *Store, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		put(t, s, i, fmt.Sprintf("echo %03d %s", i, strings.Repeat("x", 300)))
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
			s, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			putN(t, s, 0, 60)
			if err := s.Close(); err != nil { // a checkpoint: the journal's 60 records are stale now
				t.Fatal(err)
			}
			copyBadger(t, dir, snapshot) // Badger as durable at that checkpoint

			s, err = Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			putN(t, s, 60, 80) // acknowledged, in the journal over the stale records
			off := s.journal.off
			path := journalPath(dir, s.journal.gen)
			abandon(t, s)
			if tt.tear {
				f, _ := os.OpenFile(path, os.O_RDWR, 0)
				f.WriteAt([]byte{0xff, 0xff, 0xff}, off-10)
				f.Close()
			}
			copyBadger(t, snapshot, dir) // the crash: Badger lost the last 20

			s, err = Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if n, last := count(t, s); n != tt.want || last != tt.want-1 {
				t.Fatalf("%d keys (last %d) after the crash, want %d", n, last, tt.want)
			}
			// And the store goes on from there.
			putN(t, s, tt.want, tt.want+5)
			if n, last := count(t, s); n != tt.want+5 || last != tt.want+4 {
				t.Errorf("after more writes: %d keys, last %d", n, last)
			}
		})
	}
}

// Under many writers the second stage makes the batches staged meanwhile
// durable as one journal record: after a crash that took from Badger
// everything since the last checkpoint, every acknowledged write comes
// back, each built on the one before it.
func TestJournalBringsBackGroupedBatches(t *testing.T) {
	dir, snapshot := t.TempDir(), t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	copyBadger(t, dir, snapshot) // an empty Badger, durable
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 16, 50
	incrementConcurrently(t, s, writers, each)
	path, gen := journalPath(dir, s.journal.gen), s.journal.gen
	abandon(t, s)
	records, _ := readJournal(path, gen)
	t.Logf("%d writes in %d journal records", writers*each, len(records))
	copyBadger(t, snapshot, dir) // the crash: Badger lost every write

	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := counted(t, s); n != writers*each {
		t.Errorf("counter %d after the crash, want %d", n, writers*each)
	}
}

// A journal that fills up is checkpointed and used again: nothing it held
// is lost, and its records are never applied twice over newer ones.
func TestJournalCheckpoints(t *testing.T) {
	s, dir := openTest(t)
	for i := range 60 { // 60 × 200 KB, 150 KB compressed: more than the journal holds
		put(t, s, i, incompressible(200<<10, uint64(i)))
	}
	if s.journal.gen < 2 {
		t.Errorf("no checkpoint after %d MB (generation %d)", 60*200>>10, s.journal.gen)
	}
	gens, _ := journals(dir)
	if len(gens) != 1 || gens[0] != s.journal.gen {
		t.Errorf("journals on disk %v, want just generation %d", gens, s.journal.gen)
	}
	// A record larger than the journal gets a larger journal.
	huge := incompressible(2*journalSize, 60)
	put(t, s, 60, huge)
	var got string
	if err := s.Read("k/060", &got); err != nil || got != huge {
		t.Fatalf("the huge value: %d bytes, %v", len(got), err)
	}
	if n, last := count(t, s); n != 61 || last != 60 {
		t.Errorf("%d keys, last %d", n, last)
	}
}

// TestOversizedBatchIsSplit runs one batch too big for one transaction:
// the operations before the one that does not fit are committed first, and
// every operation succeeds.
func TestOversizedBatchIsSplit(t *testing.T) {
	s, _ := openTest(t)
	value := strings.Repeat("x", 10<<10) // under the value threshold: counts fully
	var batch []*op
	delivered := make([]chan error, 300)
	for i := range 300 {
		key := fmt.Sprintf("k/%03d", i)
		delivered[i] = make(chan error, 1)
		batch = append(batch, &op{
			run:     func(tx *Tx) error { return tx.Put(key, value) },
			deliver: func(err error) { delivered[i] <- err },
		})
	}
	s.commitBatch(batch) // the committer goroutine is idle: nothing else is submitted
	for i, d := range delivered {
		if err := <-d; err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	n := 0
	s.Scan(ctx, "k/", "k/", func(_, _ []byte) error { n++; return nil })
	if n != 300 {
		t.Errorf("%d keys stored, want 300", n)
	}
}

// Durable batches waiting for the third stage are applied to Badger in one
// transaction; when they do not fit in one together, each is applied in
// its own, and the store goes on.
func TestBatchesTooBigTogetherAreAppliedApart(t *testing.T) {
	s, _ := openTest(t)
	// Badger's limit on a transaction's entries (badger.Open's
	// maxBatchCount): two thirds of it fit once, not twice.
	n := int(s.db().Opts().MemTableSize*15/100) / skl.MaxNodeSize * 2 / 3
	var group []*stagedBatch
	for b := range 2 {
		sb := &stagedBatch{}
		for i := range n {
			sb.encoded = append(sb.encoded, change{key: fmt.Appendf(nil, "k/%d/%05d", b, i), val: []byte("v")})
		}
		group = append(group, sb)
	}
	s.leading.Lock() // the committer idle: nothing else writes to Badger
	s.overlay.drained()
	s.apply(group)
	s.leading.Unlock()
	if err := s.brokenErr(); err != nil {
		t.Fatalf("the store stopped: %v", err)
	}
	got := 0
	s.Scan(ctx, "k/", "k/", func(_, _ []byte) error { got++; return nil })
	if got != 2*n {
		t.Errorf("%d keys in Badger, want %d", got, 2*n)
	}
}

// Within one batch a key written twice reaches the journal once, with its
// last value (and a deleted one as deleted).
func TestJournalKeepsFinalValues(t *testing.T) {
	s, dir := openTest(t)
	_, err := Write(ctx, s, func(tx *Tx) (struct{}, error) {
		for _, v := range []string{"a", "b", "c"} {
			if err := tx.Set("x", []byte(v)); err != nil {
				return struct{}{}, err
			}
		}
		tx.Set("y", []byte("1"))
		return struct{}{}, tx.Delete("y")
	})
	if err != nil {
		t.Fatal(err)
	}
	batches, err := readJournal(journalPath(dir, s.journal.gen), s.journal.gen)
	if err != nil || len(batches) != 1 {
		t.Fatalf("%d batches: %v", len(batches), err)
	}
	b := batches[0]
	if len(b) != 2 || string(b[0].key) != "x" || string(b[0].val) != "c" || string(b[1].key) != "y" || !b[1].del {
		t.Errorf("journaled %+v", b)
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

// incompressible is n characters of base64 of random bytes (from seed):
// compressed, they keep about three quarters of their size.
func incompressible(n int, seed uint64) string {
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	b := make([]byte, n*3/4+3)
	r.Read(b)
	return base64.StdEncoding.EncodeToString(b)[:n]
}
