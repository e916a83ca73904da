package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
	"golang.org/x/sys/unix"
)

// op is one operation for the committer: fn runs inside the batch's
// transaction; its result is delivered once the transaction is durable.
type op struct {
	fn   func(*tx) (any, error)
	done chan result
}

type result struct {
	val any
	err error
}

// storeError is a failure of the store itself, as opposed to a refusal by
// an invariant. An operation that meets one is dropped from the batch.
type storeError struct{ err error }

func (e *storeError) Error() string { return "ledger store: " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// write submits fn to the committer and waits until its transaction is
// durable (or failed). Domain refusals come back as typed errors; their
// audit events, if any, are committed all the same.
func (l *Ledger) write(ctx context.Context, fn func(*tx) (any, error)) (any, error) {
	o := &op{fn: fn, done: make(chan result, 1)}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return nil, ErrClosed
	}
	select {
	case l.ops <- o:
	case <-ctx.Done():
		l.mu.RUnlock()
		return nil, ctx.Err()
	}
	l.mu.RUnlock()
	// Once submitted, the operation is waited for even if ctx ends: the
	// caller must not believe a write failed that is about to succeed.
	r := <-o.done
	return r.val, r.err
}

func (l *Ledger) commitLoop() {
	defer close(l.done)
	for first := range l.ops {
		batch := []*op{first}
	drain:
		for len(batch) < l.maxBatch {
			select {
			case o, ok := <-l.ops:
				if !ok {
					break drain
				}
				batch = append(batch, o)
			default:
				break drain
			}
		}
		l.commitBatch(batch)
	}
}

// commitBatch runs a batch in one transaction and commits it. Operations
// are pure functions of the transaction, so a batch can be run again: an
// operation that fails in the store is answered with its error and the
// others run again without it; when an operation does not fit in the
// transaction, the ones before it are committed first.
func (l *Ledger) commitBatch(batch []*op) {
	err := l.broken
	if err == nil {
		err = l.checkSpace()
	}
	if err != nil {
		for _, o := range batch {
			o.done <- result{nil, &storeError{err}}
		}
		return
	}
	for len(batch) > 0 {
		t, results, failed, err := l.run(batch)
		if failed >= 0 {
			t.txn.Discard()
			if errors.Is(err, badger.ErrTxnTooBig) && failed > 0 {
				l.commitBatch(batch[:failed])
				batch = batch[failed:]
				continue
			}
			batch[failed].done <- result{nil, err}
			batch = append(batch[:failed:failed], batch[failed+1:]...)
			continue
		}
		if err := l.commit(t); err != nil {
			for _, o := range batch {
				o.done <- result{nil, &storeError{fmt.Errorf("commit: %w", err)}}
			}
			return
		}
		l.head = t.head
		for i, o := range batch {
			o.done <- results[i]
		}
		return
	}
}

// run runs every operation of batch in a new transaction, stopping at the
// first that fails in the store (failed is its index, or -1).
func (l *Ledger) run(batch []*op) (t *tx, results []result, failed int, err error) {
	t = &tx{txn: l.db.NewTransaction(true), head: l.head, now: l.now().UTC()}
	results = make([]result, len(batch))
	for i, o := range batch {
		val, err := o.fn(t)
		var se *storeError
		if errors.As(err, &se) {
			return t, nil, i, err
		}
		results[i] = result{val, err}
	}
	return t, results, -1, nil
}

// tx is the view an operation has of the batch's transaction.
type tx struct {
	txn     *badger.Txn
	head    chainHead
	now     time.Time
	dirty   bool     // events were appended
	changes []change // every set and delete, in order, for the journal
}

// commit makes a batch durable in the journal, then commits it to Badger.
// A batch the journal holds but Badger refused stops the ledger: applying
// it at the next Open is the only way to keep later batches consistent.
func (l *Ledger) commit(t *tx) error {
	if t.dirty {
		if err := t.put(keyHead, t.head); err != nil {
			t.txn.Discard()
			return err
		}
	}
	if l.journal != nil && len(t.changes) > 0 {
		if err := l.journalBatch(t.changes); err != nil {
			t.txn.Discard()
			return err
		}
	}
	if err := t.txn.Commit(); err != nil {
		if l.journal != nil && len(t.changes) > 0 {
			l.broken = fmt.Errorf("the ledger stopped: a batch is in its journal but the store refused it (%v); restart toolgate serve to apply it", err)
		}
		return err
	}
	return nil
}

// journalBatch writes a batch's changes to the journal, starting a new
// journal (a checkpoint) when they do not fit.
func (l *Ledger) journalBatch(changes []change) error {
	payload := l.journal.encode(changes)
	if !l.journal.fits(len(payload)) {
		if err := l.checkpoint(2 * int64(len(payload))); err != nil {
			return err
		}
		payload = l.journal.encode(changes)
	}
	err := l.journal.append(payload)
	if l.journal.failed != nil {
		// A failed sync leaves the file's state unknown: stop, and let
		// the next Open read what it holds.
		l.broken = fmt.Errorf("the ledger stopped: %v; restart toolgate serve", l.journal.failed)
	}
	return err
}

// checkpoint makes everything Badger holds durable, then goes on with the
// journal as the next generation, or with a new one of at least size bytes
// when a record would not fit in it.
func (l *Ledger) checkpoint(size int64) error {
	if err := syncBadger(l.dir); err != nil {
		return err
	}
	releaseMapped(l.dir) // the pages are clean now; failing to drop them costs memory only
	if size <= l.journal.size {
		return l.journal.recycle(l.journal.gen + 1)
	}
	next, err := createJournal(l.dir, l.journal.gen+1, size)
	if err != nil {
		return err
	}
	l.journal.close()
	l.journal = next
	return removeJournalsBefore(l.dir, next.gen)
}

// get decodes the value at key into v; it reports false when there is none.
func (t *tx) get(key string, v any) (bool, error) {
	return getValue(t.txn, key, v)
}

func getValue(txn *badger.Txn, key string, v any) (bool, error) {
	item, err := txn.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, &storeError{err}
	}
	err = item.Value(func(b []byte) error { return json.Unmarshal(b, v) })
	if err != nil {
		return false, &storeError{fmt.Errorf("decode %s: %w", key, err)}
	}
	return true, nil
}

// has reports whether key exists.
func (t *tx) has(key string) (bool, error) {
	_, err := t.txn.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, &storeError{err}
	}
	return true, nil
}

func (t *tx) put(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return &storeError{fmt.Errorf("encode %s: %w", key, err)}
	}
	return t.set(key, b)
}

func (t *tx) set(key string, b []byte) error {
	k := []byte(key)
	if err := t.txn.Set(k, b); err != nil {
		return &storeError{err}
	}
	t.changes = append(t.changes, change{key: k, val: b})
	return nil
}

func (t *tx) del(key string) error {
	k := []byte(key)
	if err := t.txn.Delete(k); err != nil {
		return &storeError{err}
	}
	t.changes = append(t.changes, change{key: k, del: true})
	return nil
}

// checkSpace refuses to write when the filesystem is nearly full.
func (l *Ledger) checkSpace() error {
	if l.minFree < 0 {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(l.dir, &st); err != nil {
		return nil // cannot tell: let the write say
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free < l.minFree {
		return fmt.Errorf("%w (%d KB left, %d KB kept free)", ErrDiskFull, free>>10, l.minFree>>10)
	}
	return nil
}
