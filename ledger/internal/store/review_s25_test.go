package store

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// A compaction looks at the filesystem's space (checkSpace) on its own
// goroutine, outside leading, while a writer's batch looks too: the time
// until which a look vouches for the space (roomUntil) must not be read
// and written by both unsynchronized. Run with -race: the compaction is
// held after its look, without telling this goroutine anything (which
// would order the two looks for the race detector); this goroutine sees
// from the filesystem that the compaction has looked (its new Badger's
// directory exists) and then writes.
func TestCompactLooksAtSpaceBesideAWriter(t *testing.T) {
	s, dir := openTest(t)
	put(t, s, 1, "before")
	s.roomUntil = time.Time{} // the compaction's look is a fresh one, and records its time
	release := make(chan struct{})
	testHookCompact = func(step string) {
		if step == "copied" {
			<-release
		}
	}
	defer func() { testHookCompact = nil }()
	compacted := make(chan error, 1)
	go func() { _, err := s.Compact(ctx); compacted <- err }()
	for {
		if m, _ := filepath.Glob(filepath.Join(dir, "db-*")); len(m) > 0 {
			break
		}
		runtime.Gosched() // the compaction's look is behind us once its Badger's directory exists
	}
	put(t, s, 2, "beside the compaction")
	close(release)
	if err := <-compacted; err != nil {
		t.Fatal(err)
	}
}

// A look at the filesystem vouches for what the batches after it write,
// whatever their size: the store writes up to 8 MB a hook event (and a
// request may carry 32 MB), not a few KB. Eight 8 MB writes submitted
// together are one batch and one look; with 48 MB above MinFree, all of
// them (64 MB of values, more with the journal) were admitted, and a
// filesystem that full is written past MinFree: ENOSPC for the journal's
// next file (the store stops) or SIGBUS in Badger's maps.
//
// (It failed on the code that looked before a batch ran, whatever the
// batch then held.)
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
