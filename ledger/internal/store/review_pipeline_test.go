package store

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Many writers with values large enough that the journal is checkpointed
// several times while they write (from the second stage, or from the
// first when it makes a lone batch durable itself) and the third stage
// lags: every write a writer was told of is read back at once by it, a
// reader never sees a counter ahead of what it wrote, and after a crash
// of the process everything acknowledged is there, each write built on
// the one before it.
func TestPipelineCheckpointsUnderWriters(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{NoAutoCompact: true})
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("y", 24<<10) // under journalSize/400: a checkpoint every ~300 writes
	bump := func(tx *Tx) (int, error) {
		var n int
		if _, err := tx.Get("counter", &n); err != nil {
			return 0, err
		}
		if err := tx.Put(fmt.Sprintf("n/%06d", n), fmt.Sprintf("%d %s", n, pad)); err != nil {
			return 0, err
		}
		return n, tx.Put("counter", n+1)
	}
	const writers, each = 12, 120
	var wg sync.WaitGroup
	var stop atomic.Bool
	var readerErr atomic.Value
	gen0 := s.journal.gen
	wg.Go(func() { // a reader outside the committer
		for !stop.Load() {
			var c int
			if err := s.Read("counter", &c); err != nil {
				continue // none yet
			}
			if c > 0 {
				var v string
				if err := s.Read(fmt.Sprintf("n/%06d", c-1), &v); err != nil {
					readerErr.Store(fmt.Sprintf("counter %d but n/%06d: %v", c, c-1, err))
					return
				}
			}
		}
	})
	var writing sync.WaitGroup
	for range writers {
		writing.Go(func() {
			for range each {
				n, err := Write(ctx, s, bump)
				if err != nil {
					t.Error(err)
					return
				}
				var c int
				if err := s.Read("counter", &c); err != nil || c < n+1 {
					t.Errorf("wrote %d, then read counter %d (%v)", n, c, err)
					return
				}
			}
		})
	}
	writing.Wait()
	stop.Store(true)
	wg.Wait()
	if e := readerErr.Load(); e != nil {
		t.Fatal(e)
	}
	t.Logf("journal generations %d..%d", gen0, s.journal.gen)
	if s.journal.gen < gen0+2 {
		t.Errorf("only %d checkpoints", s.journal.gen-gen0)
	}
	abandon(t, s) // a crash of the process: Badger's unsynced pages survive it
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c := counted(t, s); c != writers*each {
		t.Errorf("counter %d, want %d", c, writers*each)
	}
}

// A compaction beside many writers, then a crash of the machine that
// takes from the new Badger everything it had not synced when the
// compaction switched to it: the journal, recycled at the switch, brings
// back every write acknowledged since, grouped or not, in order.
func TestCompactThenMachineCrashUnderWriters(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{NoAutoCompact: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 300 {
		if _, err := Write(ctx, s, increment); err != nil {
			t.Fatal(err)
		}
	}
	var snapshot, next string
	testHookCompact = func(step string) {
		if step != "switched" {
			return
		}
		// The committer is held and the new Badger synced: this is what a
		// crash of the machine leaves of it at the least.
		next = filepath.Join(dir, strings.TrimSpace(readFile(t, filepath.Join(dir, currentFile))))
		snapshot = filepath.Join(t.TempDir(), "next")
		if out, err := exec.Command("cp", "-a", next, snapshot).CombinedOutput(); err != nil {
			t.Errorf("%v %s", err, out)
		}
	}
	defer func() { testHookCompact = nil }()
	var acked atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for !stop.Load() {
				if _, err := Write(ctx, s, increment); err != nil {
					t.Error(err)
					return
				}
				acked.Add(1)
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	testHookCompact = nil
	time.Sleep(100 * time.Millisecond) // more writes, grouped, in the new generation only
	stop.Store(true)
	wg.Wait()
	gen := s.journal.gen
	abandon(t, s)
	if err := os.RemoveAll(next); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", snapshot, next).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	records, _ := readJournal(journalPath(dir, gen), gen)
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := counted(t, s)
	if int64(n) != 300+acked.Load() {
		t.Errorf("counter %d after the crash, want %d (%d journal records since the switch)", n, 300+acked.Load(), len(records))
	}
	t.Logf("%d writes; %d journal records since the switch", n, len(records))
}

func readFile(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
