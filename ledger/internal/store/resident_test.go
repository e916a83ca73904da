package store

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var mapHeader = regexp.MustCompile(`^[0-9a-f]+-[0-9a-f]+$`)

// residentKB is the resident memory of the shared maps of Badger's value
// logs and memtables in dir (as /proc/self/smaps counts it).
func residentKB(t testing.TB, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	var kb int64
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && mapHeader.MatchString(f[0]) { // a map's first line: anonymous maps have no path
			in = len(f) >= 6 && filepath.Dir(f[5]) == dir && (strings.HasSuffix(f[5], ".vlog") || strings.HasSuffix(f[5], ".mem"))
			continue
		}
		if in && len(f) == 3 && f[0] == "Rss:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			kb += n
		}
	}
	return kb
}

// writeUntilCheckpoint writes 1 KB values until the journal starts its
// next generation, and returns the resident memory of Badger's maps then.
func writeUntilCheckpoint(t testing.TB, s *Store) int64 {
	t.Helper()
	gen := s.journal.gen
	for i := 0; s.journal.gen == gen; i++ {
		if i > 20000 {
			t.Fatal("no checkpoint after 20 MB")
		}
		if _, err := Write(ctx, s, func(tx *Tx) (struct{}, error) {
			return struct{}{}, tx.Put(fmt.Sprintf("r/%06d", i), randomValue())
		}); err != nil {
			t.Fatal(err)
		}
	}
	s.overlay.readable()
	return residentKB(t, s.cur.Load().dir)
}

// After a checkpoint the store drops the resident pages of Badger's maps
// (resident.go), also once a compaction moved Badger to a subdirectory.
func TestCheckpointReleasesMappedPagesAfterCompact(t *testing.T) {
	s, _ := openTest(t)
	before := writeUntilCheckpoint(t, s)
	if _, err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	after := writeUntilCheckpoint(t, s)
	t.Logf("resident after a checkpoint: %d KB in the store's directory, %d KB in %s", before, after, s.cur.Load().dir)
	if before > 2048 {
		t.Fatalf("a checkpoint left %d KB of Badger's maps resident before any compaction", before)
	}
	if after > 2048 {
		t.Errorf("a checkpoint left %d KB of Badger's maps resident after a compaction", after)
	}
}
