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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
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
