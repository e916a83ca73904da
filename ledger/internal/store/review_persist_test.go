package store

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A batch that cannot be made durable stops the store, whatever failed
// (here its checkpoint: the journal cannot be renamed to its next
// generation), not only a failed fdatasync: a later batch was built on
// it (AfterCommit, as the ledger remembers its audit chain's head there)
// and must not be acknowledged without it.
func TestAFailedCheckpointStopsTheStore(t *testing.T) {
	s, dir := openTest(t)
	head := 0 // the committer's memory of the last link, as ledger's chain head
	link := func(tx *Tx) (int, error) {
		n := head + 1
		if err := tx.Put(fmt.Sprintf("c/%06d", n), n-1); err != nil {
			return 0, err
		}
		tx.AfterCommit(func() { head = n })
		return n, nil
	}
	if _, err := Write(ctx, s, link); err != nil {
		t.Fatal(err)
	}
	// The next batch checkpoints, and the journal cannot take its next
	// generation's name.
	s.leading.Lock()
	s.overlay.drained()
	s.sinceCheckpoint = journalSize
	block := journalPath(dir, s.journal.gen+1)
	s.leading.Unlock()
	if err := os.Mkdir(block, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(ctx, s, link); err == nil {
		t.Fatal("a batch whose checkpoint failed was acknowledged")
	} else {
		t.Logf("the failed batch: %v", err)
	}
	os.Remove(block) // the failure was transient
	n, err := Write(ctx, s, link)
	if err == nil {
		var prev int
		rerr := s.Read(fmt.Sprintf("c/%06d", n-1), &prev)
		t.Errorf("after a batch that could not be made durable, a later one built on it was acknowledged: link %d (the link before it: %v)", n, rerr)
	}
}

// A failed fdatasync under many writers, whose batches the second stage
// makes durable in groups: every batch from then on fails, and after a
// restart the store holds exactly the writes that were acknowledged, each
// built on the one before it.
func TestAFailedSyncUnderWritersStopsTheStore(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var acked, failedAfter atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 150 {
				if _, err := Write(ctx, s, increment); err == nil {
					acked.Add(1)
				} else {
					failedAfter.Add(1)
				}
			}
		})
	}
	wg.Go(func() {
		for acked.Load() < 300 {
			time.Sleep(time.Millisecond)
		}
		s.leading.Lock()
		s.overlay.drained()
		devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			t.Error(err)
		}
		real := s.journal.f
		s.journal.f = devnull // writes succeed, fdatasync fails (EINVAL)
		s.leading.Unlock()
		t.Cleanup(func() { real.Close() })
	})
	wg.Wait()
	t.Logf("%d acknowledged, %d failed; the store: %v", acked.Load(), failedAfter.Load(), s.brokenErr())
	if s.brokenErr() == nil || failedAfter.Load() == 0 {
		t.Fatal("the store did not stop")
	}
	if _, err := Write(ctx, s, increment); err == nil {
		t.Fatal("a write after the failed sync succeeded")
	}
	s.Close()
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := counted(t, s); int64(n) != acked.Load() {
		t.Errorf("counter %d after a restart, %d acknowledged", n, acked.Load())
	}
}
