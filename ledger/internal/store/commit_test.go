package store

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// freeBytes is the free space of the filesystem of dir.
func freeBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// A look at the filesystem must not vouch for what the batches after it
// write whatever their size: the store writes up to 8 MB a hook event (and
// a request may carry 32 MB), not a few KB. Eight 8 MB writes submitted
// together are one batch and one look; with 48 MB above MinFree, were all
// of them (64 MB of values, more with the journal) admitted, a filesystem
// that full would be written past MinFree: ENOSPC for the journal's next
// file (the store stops) or SIGBUS in Badger's maps.
//
// (It also catches a look made before a batch runs, whatever the batch
// then holds.)
func TestOneLookDoesNotVouchForMoreThanTheRoomItSaw(t *testing.T) {
	s, dir := openTest(t)
	put(t, s, 0, "before")
	const room, writers, size = 48 << 20, 8, 8 << 20
	s.minFree = freeBytes(t, dir) - room // read by the committer after this write
	raw := make([]byte, size*3/4)
	values := make([]string, writers)
	for i := range values {
		rand.Read(raw)
		values[i] = base64.StdEncoding.EncodeToString(raw)
	}
	// Every writer is queued before any batch runs: held here, the
	// committer takes the first and waits; the rest wait in s.ops.
	s.leading.Lock()
	errs := make(chan error, writers)
	for i := range writers {
		go func() {
			_, err := Write(ctx, s, func(tx *Tx) (struct{}, error) { return struct{}{}, tx.Put(fmt.Sprintf("big/%d", i), values[i]) })
			errs <- err
		}()
	}
	for len(s.ops) < writers-1 {
		runtime.Gosched() // the writers are submitting
	}
	s.leading.Unlock()
	admitted := 0
	for range writers {
		if err := <-errs; err == nil {
			admitted++
		} else if !errors.Is(err, ErrDiskFull) {
			t.Fatal(err)
		}
	}
	if admitted*size > room {
		t.Errorf("with %d MB above MinFree, %d writes of %d MB were admitted (%d MB)", room>>20, admitted, size>>20, admitted*size>>20)
	}
}
