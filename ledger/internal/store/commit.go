package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
	"golang.org/x/sys/unix"
)

// Error is a failure of the store itself, as opposed to a refusal by the
// caller's own rules. An operation that meets one is dropped from its
// batch and answered with it; the other operations run again without it.
type Error struct{ Err error }

func (e *Error) Error() string { return "ledger store: " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// op is one operation for the committer: run runs it inside the batch's
// transaction and keeps its result, deliver hands the result to the
// caller once the transaction is durable (or failed).
type op struct {
	run     func(*Tx) error // the store's error, if the store failed
	deliver func(err error) // err: the store's failure, or nil to deliver run's result
}

// Write submits fn to the committer and waits until its transaction is
// durable (or failed). fn's own errors (refusals) come back with its
// result, and its writes are committed all the same; a failure of the
// store comes back as an *Error with the zero T.
func Write[T any](ctx context.Context, s *Store, fn func(*Tx) (T, error)) (T, error) {
	type result struct {
		val T
		err error
	}
	var (
		attempt result
		zero    T
		done    = make(chan result, 1)
	)
	o := &op{
		run: func(t *Tx) error {
			val, err := fn(t)
			var se *Error
			if errors.As(err, &se) {
				return err
			}
			attempt = result{val, err}
			return nil
		},
		deliver: func(err error) {
			if err != nil {
				done <- result{zero, err}
				return
			}
			done <- attempt
		},
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return zero, ErrClosed
	}
	select {
	case s.ops <- o:
	case <-ctx.Done():
		s.mu.RUnlock()
		return zero, ctx.Err()
	}
	s.mu.RUnlock()
	// Once submitted, the operation is waited for even if ctx ends: the
	// caller must not believe a write failed that is about to succeed.
	r := <-done
	return r.val, r.err
}

func (s *Store) commitLoop() {
	defer close(s.done)
	for first := range s.ops {
		batch := []*op{first}
	drain:
		for len(batch) < s.maxBatch {
			select {
			case o, ok := <-s.ops:
				if !ok {
					break drain
				}
				batch = append(batch, o)
			default:
				break drain
			}
		}
		s.commitBatch(batch)
	}
}

// commitBatch runs a batch in one transaction and commits it. Operations
// are pure functions of the transaction, so a batch can be run again: an
// operation that fails in the store is answered with its error and the
// others run again without it; when an operation does not fit in the
// transaction, the ones before it are committed first.
func (s *Store) commitBatch(batch []*op) {
	err := s.broken
	if err == nil {
		err = s.checkSpace()
	}
	if err != nil {
		for _, o := range batch {
			o.deliver(&Error{err})
		}
		return
	}
	for len(batch) > 0 {
		t, failed, err := s.run(batch)
		if failed >= 0 {
			t.txn.Discard()
			if errors.Is(err, badger.ErrTxnTooBig) && failed > 0 {
				s.commitBatch(batch[:failed])
				batch = batch[failed:]
				continue
			}
			batch[failed].deliver(err)
			batch = append(batch[:failed:failed], batch[failed+1:]...)
			continue
		}
		if err := s.commit(t); err != nil {
			for _, o := range batch {
				o.deliver(&Error{fmt.Errorf("commit: %w", err)})
			}
			return
		}
		for _, fn := range t.after {
			fn()
		}
		for _, o := range batch {
			o.deliver(nil)
		}
		return
	}
}

// run runs every operation of batch in a new transaction, stopping at the
// first that fails in the store (failed is its index, or -1).
func (s *Store) run(batch []*op) (t *Tx, failed int, err error) {
	t = &Tx{txn: s.db.NewTransaction(true), now: s.now().UTC(), index: map[string]int{}}
	for i, o := range batch {
		if err := o.run(t); err != nil {
			return t, i, err
		}
	}
	return t, -1, nil
}

// commit makes a batch durable in the journal, then commits it to Badger.
// A batch the journal holds but Badger refused stops the store: applying
// it at the next Open is the only way to keep later batches consistent.
func (s *Store) commit(t *Tx) error {
	for _, fn := range t.before {
		if err := fn(t); err != nil {
			t.txn.Discard()
			return err
		}
	}
	if s.journal != nil && len(t.changes) > 0 {
		if err := s.journalBatch(t.changes); err != nil {
			t.txn.Discard()
			return err
		}
	}
	if err := t.txn.Commit(); err != nil {
		if s.journal != nil && len(t.changes) > 0 {
			s.broken = fmt.Errorf("the ledger stopped: a batch is in its journal but the store refused it (%v); restart toolgate serve to apply it", err)
		}
		return err
	}
	return nil
}

// journalBatch writes a batch's changes to the journal, starting a new
// journal (a checkpoint) when they do not fit.
func (s *Store) journalBatch(changes []change) error {
	payload := s.journal.encode(changes)
	if !s.journal.fits(len(payload)) {
		if err := s.checkpoint(2 * int64(len(payload))); err != nil {
			return err
		}
		payload = s.journal.encode(changes)
	}
	err := s.journal.append(payload)
	if s.journal.failed != nil {
		// A failed sync leaves the file's state unknown: stop, and let
		// the next Open read what it holds.
		s.broken = fmt.Errorf("the ledger stopped: %v; restart toolgate serve", s.journal.failed)
	}
	return err
}

// checkpoint makes everything Badger holds durable, then goes on with the
// journal as the next generation, or with a new one of at least size bytes
// when a record would not fit in it.
func (s *Store) checkpoint(size int64) error {
	if err := syncBadger(s.dir); err != nil {
		return err
	}
	releaseMapped(s.dir) // the pages are clean now; failing to drop them costs memory only
	if size <= s.journal.size {
		return s.journal.recycle(s.journal.gen + 1)
	}
	next, err := createJournal(s.dir, s.journal.gen+1, size)
	if err != nil {
		return err
	}
	s.journal.close()
	s.journal = next
	return removeJournalsBefore(s.dir, next.gen)
}

// checkSpace refuses to write when the filesystem is nearly full.
func (s *Store) checkSpace() error {
	if s.minFree < 0 {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(s.dir, &st); err != nil {
		return nil // cannot tell: let the write say
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free < s.minFree {
		return fmt.Errorf("%w (%d KB left, %d KB kept free)", ErrDiskFull, free>>10, s.minFree>>10)
	}
	return nil
}

// Tx is the view an operation has of its batch's transaction: it reads
// what earlier operations of the batch wrote. One Tx serves every
// operation of one attempt at a batch; a batch run again gets a new one.
type Tx struct {
	txn     *badger.Txn
	now     time.Time
	changes []change       // the final value of every key set or deleted, for the journal
	index   map[string]int // key -> its place in changes
	memo    map[string]any
	before  []func(*Tx) error
	after   []func()
}

// Memo returns the value remembered under name for this attempt at the
// batch, making it with load the first time: a decoded value that many
// operations of a batch share (the audit chain's head).
func (t *Tx) Memo(name string, load func() (any, error)) (any, error) {
	if v, ok := t.memo[name]; ok {
		return v, nil
	}
	v, err := load()
	if err != nil {
		return nil, err
	}
	if t.memo == nil {
		t.memo = map[string]any{}
	}
	t.memo[name] = v
	return v, nil
}

// BeforeCommit runs fn once, after the batch's last operation and before
// the batch is journaled and committed: it writes what operations kept in
// a Memo. An error fails the whole batch.
func (t *Tx) BeforeCommit(fn func(*Tx) error) { t.before = append(t.before, fn) }

// AfterCommit runs fn once the batch is durable, on the committer's
// goroutine, before any later batch runs: what the batch made true may be
// remembered then (never before: a batch that fails is run again).
func (t *Tx) AfterCommit(fn func()) { t.after = append(t.after, fn) }

// Now is the batch's time: every operation of a batch sees the same.
func (t *Tx) Now() time.Time { return t.now }

// Get decodes the JSON value at key into v; it reports false when there is
// none.
func (t *Tx) Get(key string, v any) (bool, error) { return getValue(t.txn, key, v) }

// GetRaw returns the bytes at key; it reports false when there is none.
// They are valid until the transaction ends.
func (t *Tx) GetRaw(key string) ([]byte, bool, error) {
	item, err := t.txn.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, &Error{err}
	}
	b, err := item.ValueCopy(nil)
	if err != nil {
		return nil, false, &Error{err}
	}
	return b, true, nil
}

// Has reports whether key exists.
func (t *Tx) Has(key string) (bool, error) {
	_, err := t.txn.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, &Error{err}
	}
	return true, nil
}

// Put stores v as JSON at key.
func (t *Tx) Put(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return &Error{fmt.Errorf("encode %s: %w", key, err)}
	}
	return t.Set(key, b)
}

// Set stores b at key.
func (t *Tx) Set(key string, b []byte) error {
	k := []byte(key)
	if err := t.txn.Set(k, b); err != nil {
		return &Error{err}
	}
	t.record(change{key: k, val: b})
	return nil
}

// Delete removes key.
func (t *Tx) Delete(key string) error {
	k := []byte(key)
	if err := t.txn.Delete(k); err != nil {
		return &Error{err}
	}
	t.record(change{key: k, del: true})
	return nil
}

// record keeps the last change of each key: the journal replays final
// values, in the order the keys were first written.
func (t *Tx) record(c change) {
	if i, ok := t.index[string(c.key)]; ok {
		t.changes[i] = c
		return
	}
	t.index[string(c.key)] = len(t.changes)
	t.changes = append(t.changes, c)
}

// Keys calls fn with every key under prefix from start on, in order, until
// fn returns false.
func (t *Tx) Keys(prefix, start string, fn func(key []byte) bool) {
	it := t.txn.NewIterator(iteratorOptions(prefix, false))
	defer it.Close()
	for it.Seek([]byte(start)); it.ValidForPrefix([]byte(prefix)); it.Next() {
		if !fn(it.Item().Key()) {
			return
		}
	}
}

func getValue(txn *badger.Txn, key string, v any) (bool, error) {
	item, err := txn.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, &Error{err}
	}
	err = item.Value(func(b []byte) error { return json.Unmarshal(b, v) })
	if err != nil {
		return false, &Error{fmt.Errorf("decode %s: %w", key, err)}
	}
	return true, nil
}
