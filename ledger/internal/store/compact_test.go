package store

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/klauspost/compress/zstd"
)

// randomValue is about 1 KB that S2 cannot shrink.
func randomValue() string {
	b := make([]byte, 760)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// Compaction keeps what is current and gives back the rest: after every
// value was written twice (the first versions fill whole value-log files)
// and some deleted, and with one value stored before compression existed
// (plain JSON), the current values read back the same after Compact, and
// after a reopen too, and the store takes at most two thirds of its disk
// before (the first versions were half of it). A large compressible value
// written compressed is copied as it was written.
func TestCompactKeepsWhatIsCurrent(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{NoAutoCompact: true}) // this Compact alone
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const n, chunk = 40000, 200 // 1 KB values: two generations of about 44 MB
	st := &state{vals: make(map[string]string, n)}
	value := func(i int) string {
		if i == 2 {
			return strings.Repeat("a compressible value; ", 50)
		}
		return randomValue()
	}
	for range 2 {
		for from := 0; from < n; from += chunk {
			_, err := Write(ctx, s, func(tx *Tx) (struct{}, error) {
				for i := from; i < from+chunk; i++ {
					key := fmt.Sprintf("v/%05d", i)
					st.vals[key] = value(i)
					if err := tx.Put(key, st.vals[key]); err != nil {
						return struct{}{}, err
					}
				}
				return struct{}{}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 1; i < n; i += 1000 {
		st.write(t, s, fmt.Sprintf("v/%05d", i), "") // deleted
	}
	old := `"` + strings.Repeat("stored before compression ", 20) + `"`
	s.overlay.readable()
	if err := s.db().Update(func(txn *badger.Txn) error { return txn.Set([]byte("old/1"), []byte(old)) }); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store, when string) {
		t.Helper()
		st.check(t, s, when)
		if raw, err := s.ReadRaw("old/1"); err != nil || string(raw) != old {
			t.Errorf("%s: the value stored before compression: %q %v", when, raw, err)
		}
	}
	cs, err := s.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compact: %+v", cs)
	if cs.After > cs.Before*2/3 || cs.After != DiskUsage(dir) {
		t.Errorf("compact gave back too little: %d bytes before, %d after (%d on disk)", cs.Before, cs.After, DiskUsage(dir))
	}
	check(s, "after Compact")
	// Written compressed (S2, one by one), it is copied as it was written:
	// the table's blocks are compressed together.
	err = s.view(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte("v/00002"))
		if err != nil {
			return err
		}
		raw, err := item.ValueCopy(nil)
		if want, _ := json.Marshal(st.vals["v/00002"]); err == nil && !bytes.Equal(raw, want) {
			err = fmt.Errorf("copied as %d bytes %.20q, not as written", len(raw), raw)
		}
		return err
	})
	if err != nil {
		t.Errorf("a compressible value: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	reopened, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	check(reopened, "after a reopen")
}

// What a compaction copies is compressed across values: 20,000 JSON
// documents of 1 KB of text-like words, each shrinking by a third alone
// (S2, as they are written), take less than a third of their size once
// compacted, zstd compressing each 64 KB block of a table together. A
// document larger than copyInlineMax (in the value log) reads back too.
func TestCompactCompressesAcrossValues(t *testing.T) {
	s, dir := openTest(t)
	words := strings.Fields("the go test run build make git commit push pull status diff log main src internal pkg cmd " +
		"file path read write edit grep find sed awk echo cat ls cd mkdir rm cp mv chmod export env func return")
	st := &state{vals: map[string]string{}}
	const n = 20000
	x := uint64(1)
	raw := 0
	for i := range n {
		var sb strings.Builder
		for sb.Len() < 1000 {
			x = x*6364136223846793005 + 1442695040888963407
			sb.WriteString(words[(x>>33)%uint64(len(words))] + " ")
		}
		st.vals[fmt.Sprintf("e/%06d", i)] = sb.String()
		raw += sb.Len()
	}
	big := strings.Repeat("x", copyInlineMax+1)
	st.vals["big"] = big
	for from := 0; from < n; from += 500 {
		_, err := Write(ctx, s, func(tx *Tx) (struct{}, error) {
			for i := from; i < from+500; i++ {
				key := fmt.Sprintf("e/%06d", i)
				if err := tx.Put(key, st.vals[key]); err != nil {
					return struct{}{}, err
				}
			}
			return struct{}{}, tx.Put("big", big)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	before := DiskUsage(dir)
	if _, err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	// Badger's files; the journal beside them takes its 8 MB whatever it holds.
	after := DiskUsage(s.cur.Load().dir)
	t.Logf("%d bytes of documents: the store took %d bytes before, its Badger %d after", raw, before, after)
	if after > int64(raw)/3 {
		t.Errorf("%d bytes of documents take %d bytes compacted: more than a third", raw, after)
	}
	st.check(t, s, "after Compact")
}

// state is what a test wrote and was acknowledged: each key's value, ""
// for deleted.
type state struct {
	mu   sync.Mutex
	vals map[string]string
}

func (st *state) write(t testing.TB, s *Store, key, val string) {
	t.Helper()
	_, err := Write(ctx, s, func(tx *Tx) (struct{}, error) {
		if val == "" {
			return struct{}{}, tx.Delete(key)
		}
		return struct{}{}, tx.Put(key, val)
	})
	if err != nil {
		t.Error(err)
		return
	}
	st.mu.Lock()
	st.vals[key] = val
	st.mu.Unlock()
}

// check reads every key the test wrote from s.
func (st *state) check(t testing.TB, s *Store, when string) {
	t.Helper()
	st.mu.Lock()
	defer st.mu.Unlock()
	for key, want := range st.vals {
		var got string
		err := s.Read(key, &got)
		if want == "" && !errors.Is(err, ErrNotFound) || want != "" && (err != nil || got != want) {
			t.Fatalf("%s: %s reads %.20q %v, want %.20q", when, key, got, err, want)
		}
	}
}

// checkAfterReopen closes s, opens its directory again, and checks what
// the test wrote there.
func (st *state) checkAfterReopen(t *testing.T, s *Store, dir string) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	reopened, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	st.check(t, reopened, "after a reopen")
}

// A compaction runs beside writers, a deleter and readers that nest a
// read in a scan, twice over: every write acknowledged before, during and
// after it reads back as it was written, deleted keys stay deleted, and so
// after a reopen. Run it with -race.
func TestCompactBesideWritesAndReads(t *testing.T) {
	s, dir := openTest(t)
	st := &state{vals: map[string]string{}}
	for i := range 3000 {
		st.write(t, s, fmt.Sprintf("k/%05d", i), randomValue())
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// Each writer has its own keys: the order of its writes is
				// the order they were acknowledged in.
				st.write(t, s, fmt.Sprintf("w%d/%06d", w, i), randomValue())
				st.write(t, s, fmt.Sprintf("k/%05d", (i*7)%1000*3+w), randomValue()) // a newer version
				if i%5 == 0 {
					st.write(t, s, fmt.Sprintf("k/%05d", (i*11)%1000*3+w), "") // deleted
				}
			}
		})
	}
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			n := 0
			err := s.Scan(ctx, "k/", "k/", func(key, _ []byte) error {
				if n++; n%500 == 0 {
					var v string
					if err := s.Read("k/00000", &v); err != nil && !errors.Is(err, ErrNotFound) {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 2 {
		if _, err := s.Compact(ctx); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	st.check(t, s, "after two compactions beside writes")
	st.checkAfterReopen(t, s, dir)
	if got := badgers(t, dir); len(got) != 1 || got[0] != "db-2" {
		t.Errorf("the store's Badgers after two compactions: %v, want db-2 alone", got)
	}
}

// badgers lists where the store in dir has Badger files: "." for its own
// directory, and its subdirectories db-<n>.
func badgers(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Name() == "MANIFEST" {
			out = append(out, ".")
		} else if _, ok := generation(e.Name()); ok && e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// A crash at any step of a compaction, from the store's own directory
// (made before compaction existed) and then from a subdirectory, leaves a
// store that opens with everything acknowledged, the writes made while
// the first step ran among them, and one Badger. The crash is a copy of
// the store's files taken at the step.
func TestCompactCrashAtEachStep(t *testing.T) {
	s, dir := openTest(t)
	st := &state{vals: map[string]string{}}
	for i := range 2000 {
		st.write(t, s, fmt.Sprintf("k/%05d", i), randomValue())
	}
	for i := range 1000 {
		st.write(t, s, fmt.Sprintf("k/%05d", i), randomValue())
	}
	type image struct {
		step, dir string
		vals      map[string]string
	}
	var images []image
	round := 0
	testHookCompact = func(step string) {
		if step == "copied" {
			// Writes while the first step ran: the second copies them.
			st.write(t, s, fmt.Sprintf("k/%05d", 1), "")
			st.write(t, s, fmt.Sprintf("k/%05d", 2), "rewritten in round "+fmt.Sprint(round))
			st.write(t, s, fmt.Sprintf("new/%d", round), randomValue())
		}
		img := filepath.Join(t.TempDir(), "crash")
		if out, err := exec.Command("cp", "-a", dir, img).CombinedOutput(); err != nil {
			t.Fatalf("copy the store at %q: %v %s", step, err, out)
		}
		st.mu.Lock()
		vals := make(map[string]string, len(st.vals))
		for k, v := range st.vals {
			vals[k] = v
		}
		st.mu.Unlock()
		images = append(images, image{fmt.Sprintf("round %d, %s", round, step), img, vals})
	}
	defer func() { testHookCompact = nil }()
	for round = 1; round <= 2; round++ {
		if _, err := s.Compact(ctx); err != nil {
			t.Fatal(err)
		}
	}
	testHookCompact = nil
	if len(images) != 8 {
		t.Fatalf("%d steps seen, want 4 a compaction", len(images))
	}
	for _, img := range images {
		c, err := Open(img.dir, Options{})
		if err != nil {
			t.Fatalf("%s: open: %v", img.step, err)
		}
		(&state{vals: img.vals}).check(t, c, img.step)
		if got := badgers(t, img.dir); len(got) != 1 {
			t.Errorf("%s: the store has Badgers in %v, want one", img.step, got)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A store whose files doubled since it was opened compacts itself beside
// writes: 30 MB of versions written over 500 keys come down to what is
// current, and the writes made meanwhile are kept.
func TestCompactsItselfWhenItDoubled(t *testing.T) {
	defer func(min int64) { autoCompactMin = min }(autoCompactMin)
	autoCompactMin = 4 << 20
	compacted := make(chan struct{}, 16)
	testHookCompact = func(step string) {
		if step == "replaced" {
			compacted <- struct{}{}
		}
	}
	defer func() { testHookCompact = nil }()
	s, dir := openTest(t)
	st := &state{vals: map[string]string{}}
	for i := range 30000 {
		st.write(t, s, fmt.Sprintf("k/%03d", i%500), randomValue())
	}
	select {
	case <-compacted:
	case <-time.After(time.Minute):
		t.Fatalf("no compaction after 30 MB written over 500 keys; the store takes %d MB", DiskUsage(dir)>>20)
	}
	if err := s.Close(); err != nil { // waits for a compaction under way
		t.Fatal(err)
	}
	// Badger's own files take what they are made with (a value log's
	// first chunk, its discard statistics): about 10 MB with the journal.
	if size := DiskUsage(dir); size > 24<<20 {
		t.Errorf("the store takes %d MB after compacting itself", size>>20)
	}
	reopened, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	st.check(t, reopened, "after compacting itself")
}

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
	// The filesystem is shared: what other processes wrote meanwhile (the
	// other packages' tests, on CI) has eaten into the 16 MB. The store
	// goes on whenever there is room above MinFree, so MinFree is set
	// anew, with room, before the write that shows it.
	s.minFree = freeBytes(t, dir) - 256<<20
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

// copyOptions asks for zstd level 3, badgerOptions for Badger's default
// (1). Badger keeps one zstd encoder for the process, made at the level
// of the first table it compresses: a daemon flushes a memtable before it
// compacts, and every later compaction gets that level.
func TestCompactGetsTheZSTDLevelItAsksFor(t *testing.T) {
	words := strings.Fields("the go test run build make git commit push pull status diff log main src internal pkg cmd " +
		"file path read write edit grep find sed awk echo cat ls cd mkdir rm cp mv chmod export env func return")
	x := uint64(1)
	var sb strings.Builder
	for sb.Len() < 2<<20 {
		x = x*6364136223846793005 + 1442695040888963407
		sb.WriteString(words[(x>>33)%uint64(len(words))] + " ")
	}
	block := []byte(sb.String())
	// The store's first table compressed (a memtable flushed, with
	// badgerOptions), then a compaction's (copyOptions).
	first := badgerOptions(t.TempDir(), Options{}).ZSTDCompressionLevel
	copied := copyOptions(t.TempDir(), Options{}).ZSTDCompressionLevel
	y.ZSTDCompress(nil, block[:64<<10], first)
	got, _ := y.ZSTDCompress(nil, block, copied)
	want := zstdAt(t, block, copied)
	t.Logf("level %d asked: %d bytes; level %d gives %d", copied, len(got), copied, want)
	if first != copied && len(got) != want {
		t.Errorf("a compaction asks for zstd level %d, gets level %d's (%d bytes, not %d): Badger's encoder is the process's, made at the level of the first table", copied, first, len(got), want)
	}
}

// zstdAt is the size of b compressed at level by an encoder of its own.
func zstdAt(t *testing.T, b []byte, level int) int {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)))
	if err != nil {
		t.Fatal(err)
	}
	return len(e.EncodeAll(b, nil))
}
