package store

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// A batch reads what the batches staged before it wrote, although Badger
// does not hold it yet: values, deletions and keys, under its own writes.
func TestOverlay(t *testing.T) {
	s, _ := openTest(t)
	for _, k := range []string{"k/a", "k/b", "k/c"} {
		if _, err := Write(ctx, s, func(tx *Tx) (struct{}, error) { return struct{}{}, tx.Put(k, "badger") }); err != nil {
			t.Fatal(err)
		}
	}
	s.overlay.readable()
	// Staged, never applied: what the second stage has in hand.
	staged := []change{{key: []byte("k/b"), val: []byte(`"staged"`)}, {key: []byte("k/c"), del: true}, {key: []byte("k/d"), val: []byte(`"staged"`)}}
	s.overlay.push(staged, nil)
	tx := s.newTx()
	defer tx.txn.Discard()
	if err := tx.Put("k/e", "own"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Put("k/d", "own"); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"k/a": "badger", "k/b": "staged", "k/c": "", "k/d": "own", "k/e": "own"} {
		var got string
		found, err := tx.Get(key, &got)
		if err != nil || found != (want != "") || got != want {
			t.Errorf("%s: %q found %v %v, want %q", key, got, found, err, want)
		}
		if has, _ := tx.Has(key); has != (want != "") {
			t.Errorf("%s: has %v", key, has)
		}
	}
	var keys []string
	tx.Keys("k/", "k/", func(k []byte) bool { keys = append(keys, string(k)); return true })
	if strings.Join(keys, " ") != "k/a k/b k/d k/e" {
		t.Errorf("keys %q", keys)
	}
	keys = nil
	tx.Keys("k/", "k/c", func(k []byte) bool { keys = append(keys, string(k)); return len(keys) < 2 })
	if strings.Join(keys, " ") != "k/d k/e" {
		t.Errorf("keys from k/c, two: %q", keys)
	}
	// Outside the committer, nothing staged is read.
	var got string
	if err := s.Read("k/b", &got); err != nil || got != "badger" {
		t.Errorf("read outside: %q %v", got, err)
	}
}

// increment adds one to "counter", and writes n/<n> for the n it found.
func increment(tx *Tx) (struct{}, error) {
	var n int
	if _, err := tx.Get("counter", &n); err != nil {
		return struct{}{}, err
	}
	if err := tx.Put(fmt.Sprintf("n/%06d", n), n); err != nil {
		return struct{}{}, err
	}
	return struct{}{}, tx.Put("counter", n+1)
}

// incrementConcurrently runs increment each times on each of writers
// goroutines at once.
func incrementConcurrently(t *testing.T, s *Store, writers, each int) {
	t.Helper()
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				if _, err := Write(ctx, s, increment); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// counted returns "counter", once it checked that the entries n/ are those
// it counted, in order: no write was lost, and each built on the one
// before it.
func counted(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.Read("counter", &n); err != nil {
		t.Fatalf("counter: %v", err)
	}
	seen := 0
	s.Scan(ctx, "n/", "n/", func(k, _ []byte) error {
		if want := fmt.Sprintf("n/%06d", seen); string(k) != want {
			t.Fatalf("%s, want %s", k, want)
		}
		seen++
		return nil
	})
	if seen != n {
		t.Errorf("%d entries, counter %d: a batch did not see the one before it", seen, n)
	}
	return n
}

// Many writers, each reading what the last batch wrote: with the three
// stages running at once, every write builds on the one before it.
func TestPipelinedCounter(t *testing.T) {
	s, _ := openTest(t)
	const writers, each = 16, 200
	incrementConcurrently(t, s, writers, each)
	if n := counted(t, s); n != writers*each {
		t.Errorf("counter %d, want %d", n, writers*each)
	}
}
