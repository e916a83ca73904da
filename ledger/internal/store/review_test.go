package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"golang.org/x/sys/unix"
)

// dropTombstones makes the open Badger of s forget the delete markers it
// may drop: it flushes the memtables into tables (DropPrefix of a key it
// writes for that) and compacts them into one level, as Badger's own
// compactions do beside writes once nothing reads at an older version.
func dropTombstones(t testing.TB, s *Store) {
	t.Helper()
	for i := range 3 {
		key := fmt.Sprintf("zz-flush/%d", i)
		if _, err := Write(ctx, s, func(tx *Tx) (struct{}, error) { return struct{}{}, tx.Set(key, []byte("x")) }); err != nil {
			t.Fatal(err)
		}
		s.overlay.readable()
		if err := s.db().DropPrefix([]byte("zz-flush/")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db().Flatten(1); err != nil {
		t.Fatal(err)
	}
}

// hasVersions reports whether Badger holds any version of key (a value or
// a delete marker).
func hasVersions(t testing.TB, db *badger.DB, key string) bool {
	t.Helper()
	found := false
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{AllVersions: true, Prefix: []byte(key)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if string(it.Item().Key()) == key {
				found = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// A key deleted after the stream copied it, whose delete marker Badger's
// own compaction dropped before the delta copy ran (nothing reads at an
// older version then), must stay deleted: the delta copy must still see
// that the key changed.
func TestCompactKeepsADeleteWhoseMarkerBadgerDropped(t *testing.T) {
	s, dir := openTest(t)
	st := &state{vals: map[string]string{}}
	for i := range 200 {
		st.write(t, s, fmt.Sprintf("k/%05d", i), randomValue())
	}
	dropped := false
	testHookCompact = func(step string) {
		if step != "copied" {
			return
		}
		st.write(t, s, "k/00001", "") // the stream copied its value
		dropTombstones(t, s)
		dropped = !hasVersions(t, s.db(), "k/00001")
	}
	defer func() { testHookCompact = nil }()
	if _, err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	testHookCompact = nil
	t.Logf("Badger dropped the delete marker before the delta copy: %v", dropped)
	var got string
	if err := s.Read("k/00001", &got); !errors.Is(err, ErrNotFound) {
		t.Errorf("k/00001 was deleted during the compaction, reads %.20q %v after it", got, err)
	}
	st.check(t, s, "after Compact")
	st.checkAfterReopen(t, s, dir)
}

// A compaction that fails after CURRENT names the new Badger (here the
// journal cannot start its next generation: a directory stands where it
// would go) stops the store, and must leave the Badger CURRENT names
// where it is: the next Open opens it. Everything acknowledged before is
// there after the reopen.
func TestCompactFailingAfterTheSwitchKeepsTheNewBadger(t *testing.T) {
	s, dir := openTest(t)
	st := &state{vals: map[string]string{}}
	for i := range 300 {
		st.write(t, s, fmt.Sprintf("k/%05d", i), randomValue())
	}
	// Reopened: what was written is in Badger alone, not in the journal.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st.write(t, s, "k/00001", "rewritten")
	blocker := ""
	testHookCompact = func(step string) {
		if step == "switched" {
			blocker = journalPath(dir, s.journal.gen+1)
			if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o700); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer func() { testHookCompact = nil }()
	if _, err := s.Compact(ctx); err == nil {
		t.Fatal("Compact did not fail")
	}
	testHookCompact = nil
	if _, err := Write(ctx, s, func(tx *Tx) (struct{}, error) { return struct{}{}, tx.Set("after", []byte("x")) }); err == nil {
		t.Error("the store took a write after its compaction failed past the switch")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(blocker); err != nil { // what failed is mended
		t.Fatal(err)
	}
	reopened, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	st.check(t, reopened, "after the failed compaction and a reopen")
}

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

// freeBytes is the free space of the filesystem of dir.
func freeBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// A compaction whose copy would not fit in what the filesystem has above
// MinFree stops with ErrDiskFull, removes what it copied, and the store
// goes on. (On a full filesystem the copy's writes through Badger's
// memory maps kill the process with SIGBUS: on a 96 MB tmpfs holding 45 MB
// of current values and MinFree 8 MB, Compact did.) Here the filesystem
// is large; the test raises MinFree until 16 MB are left above it, less
// than the 40 MB the copy needs.
func TestCompactStopsWhenTheCopyWouldFillTheDisk(t *testing.T) {
	s, dir := openTest(t)
	for c := range 40 {
		_, err := Write(ctx, s, func(tx *Tx) (struct{}, error) {
			for i := range 1000 {
				if err := tx.Put(fmt.Sprintf("k/%02d/%04d", c, i), randomValue()); err != nil {
					return struct{}{}, err
				}
			}
			return struct{}{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	s.minFree = freeBytes(t, dir) - 16<<20 // read by the committer after this write
	if _, err := Write(ctx, s, func(tx *Tx) (struct{}, error) { return struct{}{}, tx.Put("before", "x") }); err != nil {
		t.Fatal(err)
	}
	_, err := s.Compact(ctx)
	if !errors.Is(err, ErrDiskFull) {
		t.Errorf("Compact with 16 MB above MinFree for a 40 MB copy: %v, want ErrDiskFull", err)
	}
	if got := badgers(t, dir); len(got) != 1 || got[0] != "." {
		t.Errorf("the store's Badgers after a compaction that did not fit: %v", got)
	}
	if _, err := Write(ctx, s, func(tx *Tx) (struct{}, error) { return struct{}{}, tx.Put("after", "x") }); err != nil {
		t.Errorf("a write after the compaction stopped: %v", err)
	}
}

// A second Open (another daemon starting) that read CURRENT before a
// compaction of the open store switched, and takes the lock of the
// Badger CURRENT named once the compaction let it go, must not open it:
// it would make an empty Badger there and remove the store's new one as
// retired. It fails as locked, and the store keeps what it holds.
func TestOpenBesideACompactionThatSwitches(t *testing.T) {
	s, dir := openTest(t)
	st := &state{vals: map[string]string{}}
	for i := range 200 {
		st.write(t, s, fmt.Sprintf("k/%05d", i), randomValue())
	}
	read, compacted := make(chan struct{}), make(chan struct{})
	testHookOpen = func() {
		testHookOpen = nil
		close(read)
		<-compacted
	}
	defer func() { testHookOpen = nil }()
	opened := make(chan error, 1)
	go func() {
		o, err := Open(dir, Options{})
		if err == nil {
			o.Close()
		}
		opened <- err
	}()
	<-read // the second Open read CURRENT
	if _, err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	close(compacted)
	if err := <-opened; !errors.As(err, new(*LockedError)) {
		t.Errorf("a second Open beside a compaction: %v, want a LockedError", err)
	}
	st.check(t, s, "after a second Open beside a compaction")
	st.checkAfterReopen(t, s, dir)
}

// A CURRENT that names a Badger which is not there (a store copied without
// it, or what a failed compaction used to leave) is refused: opening it
// would make an empty Badger and remove the store's as retired.
func TestOpenRefusesACurrentNamingNoBadger(t *testing.T) {
	s, dir := openTest(t)
	for i := range 100 {
		put(t, s, i, randomValue())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := writeCurrent(dir, "db-9"); err != nil {
		t.Fatal(err)
	}
	o, err := Open(dir, Options{})
	t.Logf("Open: %v", err)
	if err == nil {
		o.Close()
		t.Error("Open made an empty Badger where CURRENT named one that is not there")
	}
	if got := badgers(t, dir); len(got) != 1 || got[0] != "." {
		t.Errorf("the store's Badgers after the refused Open: %v, want its own directory's", got)
	}
}
