package store

import (
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
