package store

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// Compaction keeps what is current: after every value was written twice
// (the first versions fill whole value-log files) and some deleted, and
// with one value stored before compression existed (plain JSON), the
// current values read back the same after Compact, and after a reopen
// too. A large compressible value is stored compressed. (What Compact gave
// back is logged, not asserted: at this size it is nothing, see
// compact.go.)
func TestCompactKeepsWhatIsCurrent(t *testing.T) {
	s, dir := openTest(t)
	const n, chunk = 40000, 200 // 1 KB values: two generations of about 44 MB
	values := make(map[int]string, n)
	value := func(i int) string {
		if i == 2 {
			return strings.Repeat("a compressible value; ", 50)
		}
		b := make([]byte, 760)
		rand.Read(b)
		return base64.StdEncoding.EncodeToString(b) // S2 cannot shrink it
	}
	for range 2 {
		for from := 0; from < n; from += chunk {
			_, err := Write(ctx, s, func(tx *Tx) (struct{}, error) {
				for i := from; i < from+chunk; i++ {
					values[i] = value(i)
					if err := tx.Put(fmt.Sprintf("v/%05d", i), values[i]); err != nil {
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
		if _, err := Write(ctx, s, func(tx *Tx) (struct{}, error) { return struct{}{}, tx.Delete(fmt.Sprintf("v/%05d", i)) }); err != nil {
			t.Fatal(err)
		}
	}
	old := `"` + strings.Repeat("stored before compression ", 20) + `"`
	s.overlay.readable()
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("old/1"), []byte(old)) }); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store, when string) {
		t.Helper()
		for i := range n {
			var got string
			err := s.Read(fmt.Sprintf("v/%05d", i), &got)
			switch {
			case i%1000 == 1 && err == nil:
				t.Fatalf("%s: v/%05d was deleted, reads %.20q", when, i, got)
			case i%1000 != 1 && (err != nil || got != values[i]):
				t.Fatalf("%s: v/%05d reads %.20q %v, want %.20q", when, i, got, err, values[i])
			}
		}
		if raw, err := s.ReadRaw("old/1"); err != nil || string(raw) != old {
			t.Errorf("%s: the value stored before compression: %q %v", when, raw, err)
		}
	}
	st, err := s.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compact: %+v", st)
	check(s, "after Compact")
	err = s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte("v/00002"))
		if err != nil {
			return err
		}
		raw, err := item.ValueCopy(nil)
		if err == nil && (len(raw) == 0 || raw[0] != s2Marker || len(raw) >= len(values[2])) {
			err = fmt.Errorf("stored as %d bytes, not compressed", len(raw))
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
