package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
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
	if s.leading.TryLock() {
		// No batch is being run: this writer runs its own (with whatever
		// was submitted meanwhile) on its goroutine, which spares a lone
		// writer two hand-offs between goroutines.
		s.commitBatch(s.gather(o))
		s.leading.Unlock()
		s.mu.RUnlock()
		r := <-done
		return r.val, r.err
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

// gather is a batch: first, then the operations waiting, up to maxBatch.
func (s *Store) gather(first *op) []*op {
	batch := []*op{first}
	for len(batch) < s.maxBatch {
		select {
		case o, ok := <-s.ops:
			if !ok {
				return batch
			}
			batch = append(batch, o)
		default:
			return batch
		}
	}
	return batch
}

// commitLoop is the first stage of the committer: it gathers the
// operations submitted meanwhile into a batch, runs them in one
// transaction, and hands the batch's changes to the second stage
// (persistLoop), which makes them durable, and that to the third
// (applyLoop), which applies them to Badger. Each goes on with the next
// batch meanwhile: the operations of one batch, the journal's fsync of
// those before it, and Badger's commit of those before that run at once.
// The next batch reads what the batches not yet applied wrote (their
// changes stay visible to it, overlay.go); nothing outside the committer
// sees a batch before it is durable, in the journal and in Badger.
//
// One batch runs at a time (leading): here, or on the goroutine of a writer
// that found none running (Write).
func (s *Store) commitLoop() {
	defer close(s.staged)
	for first := range s.ops {
		s.leading.Lock()
		s.commitBatch(s.gather(first))
		s.leading.Unlock()
	}
}

// commitBatch runs a batch in one transaction and stages it. Operations
// are pure functions of the transaction, so a batch can be run again: an
// operation that fails in the store is answered with its error and the
// others run again without it; when an operation does not fit in the
// transaction, the ones before it are staged first. A batch the
// filesystem has no room for is refused whole (admit).
func (s *Store) commitBatch(batch []*op) {
	if err := s.brokenErr(); err != nil {
		s.refuse(batch, err)
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
		if err := s.admit(t); err != nil {
			t.txn.Discard()
			s.refuse(batch, err)
			return
		}
		s.stage(t, batch)
		return
	}
}

// refuse answers every operation of a batch with the store's failure err.
func (s *Store) refuse(batch []*op, err error) {
	for _, o := range batch {
		o.deliver(&Error{err})
	}
}

// run runs every operation of batch in a new transaction, stopping at the
// first that fails in the store (failed is its index, or -1).
func (s *Store) run(batch []*op) (t *Tx, failed int, err error) {
	t = s.newTx()
	for i, o := range batch {
		if err := o.run(t); err != nil {
			return t, i, err
		}
	}
	return t, -1, nil
}

// stage finishes a batch whose operations ran (its BeforeCommit work),
// lets later batches build on it (AfterCommit), and hands it to the second
// stage. Its transaction only served reads: the third stage applies its
// changes.
func (s *Store) stage(t *Tx, batch []*op) {
	defer t.txn.Discard()
	for _, fn := range t.before {
		if err := fn(t); err != nil {
			for _, o := range batch {
				o.deliver(&Error{fmt.Errorf("commit: %w", err)})
			}
			return
		}
	}
	for _, fn := range t.after {
		fn()
	}
	b := s.overlay.push(t.changes, batch)
	b.onApplied = t.applied
	if s.unpersisted.Load() == 0 && len(s.ops) == 0 {
		// Nothing to run meanwhile, and every batch before it is durable
		// and handed to the third stage: it is made durable and
		// acknowledged here, without a hand-off (a lone writer waits for
		// no other goroutine), and handed to the third stage after them.
		group := []*stagedBatch{b}
		s.persistAck(group)
		s.persisted <- group
		return
	}
	s.unpersisted.Add(1)
	s.staged <- b
}

// persistLoop is the second stage of the committer: the staged batches, in
// order, are made durable and acknowledged, then handed to the third
// stage. Those staged while it made some durable are made durable
// together, with one fdatasync: the first stage runs a batch of whatever
// was submitted meanwhile, so that under many writers it stages small
// batches faster than each could be synced on its own.
func (s *Store) persistLoop() {
	defer close(s.persisted)
	for b := range s.staged {
		group := gatherMore(s.staged, []*stagedBatch{b})
		s.persistAck(group)
		s.persisted <- group
		s.unpersisted.Add(-int64(len(group)))
	}
}

// applyLoop is the third stage of the committer: it applies durable
// batches to Badger, in order, those waiting in one transaction.
func (s *Store) applyLoop() {
	defer close(s.done)
	for group := range s.persisted {
		for _, more := range gatherMore(s.persisted, nil) {
			group = append(group, more...)
		}
		s.apply(group)
		for _, b := range group {
			s.overlay.applied(b)
			if b.err == nil {
				for _, fn := range b.onApplied {
					fn()
				}
			}
		}
	}
}

// apply writes durable batches to Badger: in one transaction, or each in
// its own when they do not fit in one.
func (s *Store) apply(group []*stagedBatch) {
	var all []change
	for _, b := range group {
		if b.err == nil {
			all = append(all, b.encoded...)
		}
	}
	if len(all) == 0 {
		return
	}
	err := s.db().Update(func(txn *badger.Txn) error { return setAll(txn, all) })
	if !errors.Is(err, badger.ErrTxnTooBig) {
		s.refused(err)
		return
	}
	for _, b := range group {
		if b.err == nil {
			s.write(b.encoded)
		}
	}
}

// gatherMore adds to some what waits in ch, up to its capacity.
func gatherMore[T any](ch <-chan T, some []T) []T {
	for len(some) < cap(ch) {
		select {
		case v, ok := <-ch:
			if !ok {
				return some
			}
			some = append(some, v)
		default:
			return some
		}
	}
	return some
}

// persistAck makes staged batches durable in the journal, with one
// fdatasync, and acknowledges them; the third stage applies them to
// Badger after (a reader outside the committer waits for what was
// acknowledged before it: readable). A failure stops the store: every
// later batch (built on the failed ones) fails too. Batches are made
// durable in order.
func (s *Store) persistAck(group []*stagedBatch) {
	err := s.brokenErr()
	if err == nil {
		if err = s.persist(group); err != nil {
			// Whatever failed (a write, a sync, a checkpoint), later
			// batches were built on these: on their changes, and on what
			// their AfterCommit remembered (the audit chain's head). None
			// may be acknowledged without them.
			s.setBroken(fmt.Errorf("the ledger stopped: a batch could not be made durable (%v); restart toolgate serve", err))
		}
	}
	for _, b := range group {
		b.err = err
		s.overlay.acked(b)
		for _, o := range b.ops {
			if err != nil {
				o.deliver(&Error{fmt.Errorf("commit: %w", err)})
			} else {
				o.deliver(nil)
			}
		}
	}
}

// persist makes batches durable in the journal, as one record, and keeps
// each one's changes as stored.
func (s *Store) persist(group []*stagedBatch) error {
	var all []change
	raw := 0
	for _, b := range group {
		b.encoded = make([]change, len(b.changes))
		for i, c := range b.changes {
			b.encoded[i] = change{key: c.key, val: encodeValue(c.val), del: c.del}
			raw += len(c.key) + len(c.val)
		}
		all = append(all, b.encoded...)
	}
	if s.journal != nil && len(all) > 0 {
		return s.journalBatch(all, raw)
	}
	return nil
}

// write writes a durable batch to Badger, in one transaction when it fits
// in one.
func (s *Store) write(encoded []change) {
	if len(encoded) == 0 {
		return
	}
	err := s.db().Update(func(txn *badger.Txn) error { return setAll(txn, encoded) })
	if errors.Is(err, badger.ErrTxnTooBig) {
		err = s.writeBatch(encoded) // not atomic to readers; the journal has it whole
	}
	s.refused(err)
}

// refused stops the store when Badger refused a durable batch (err): the
// journal holds it, and applying it at the next Open is the only way to
// keep later batches consistent.
func (s *Store) refused(err error) {
	if err != nil {
		s.setBroken(fmt.Errorf("the ledger stopped: a batch is in its journal but the store refused it (%v); restart toolgate serve to apply it", err))
	}
}

func setAll(txn *badger.Txn, changes []change) error {
	for _, c := range changes {
		var err error
		if c.del {
			err = txn.Delete(c.key)
		} else {
			err = txn.Set(c.key, c.val)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) writeBatch(changes []change) error {
	wb := s.db().NewWriteBatch()
	defer wb.Cancel()
	for _, c := range changes {
		var err error
		if c.del {
			err = wb.Delete(c.key)
		} else {
			err = wb.Set(c.key, c.val)
		}
		if err != nil {
			return err
		}
	}
	return wb.Flush()
}

// journalBatch writes a batch's changes to the journal, starting a new
// journal (a checkpoint) when they do not fit, or when Badger has taken a
// journal's worth since the last one: values are compressed in the
// journal, not in Badger's memory maps, whose pages a checkpoint lets go.
func (s *Store) journalBatch(changes []change, raw int) error {
	payload := s.journal.encode(changes)
	s.sinceCheckpoint += int64(raw)
	if !s.journal.fits(len(payload)) || s.sinceCheckpoint >= journalSize {
		if err := s.checkpoint(2 * int64(len(payload))); err != nil {
			return err
		}
		payload = s.journal.encode(changes)
	}
	err := s.journal.append(payload)
	if s.journal.failed != nil {
		// A failed sync leaves the file's state unknown: stop, and let
		// the next Open read what it holds.
		s.setBroken(fmt.Errorf("the ledger stopped: %v; restart toolgate serve", s.journal.failed))
	}
	return err
}

// checkpoint makes everything Badger holds durable, then goes on with the
// journal as the next generation, or with a new one of at least size bytes
// when a record would not fit in it.
func (s *Store) checkpoint(size int64) error {
	// Every batch the journal holds must be in Badger before Badger is
	// synced and the journal used again: the third stage may still be
	// applying the ones made durable before this one.
	s.overlay.readable()
	bdir := s.cur.Load().dir // a compaction replaces it only while this stage is idle
	if err := syncBadger(bdir); err != nil {
		return err
	}
	s.sinceCheckpoint = 0
	releaseMapped(bdir) // the pages are clean now; failing to drop them costs memory only
	s.compactIfGrown()
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

// brokenErr is why the store stopped, or nil.
func (s *Store) brokenErr() error {
	s.brokenMu.Lock()
	defer s.brokenMu.Unlock()
	return s.broken
}

func (s *Store) setBroken(err error) {
	s.brokenMu.Lock()
	defer s.brokenMu.Unlock()
	if s.broken == nil {
		s.broken = err
	}
}

// admit refuses a batch the filesystem has no room for above MinFree:
// its changes take about spaceFactor times their size (the journal's
// record, Badger's value log and tables, the journal's next file). A look
// (statfs) that found spaceMargin more than that vouches, for spaceCheck,
// for an eighth of what it found left: the look had been a system call
// every batch, of a few KB a call, but a batch may hold 8 MB events, and
// one larger than what is vouched for looks again.
// Only the committer calls it, holding leading: roomUntil and roomLeft
// are its own.
func (s *Store) admit(t *Tx) error {
	var n int64
	for _, c := range t.changes {
		n += int64(len(c.key) + len(c.val))
	}
	n *= spaceFactor
	if n <= s.roomLeft && time.Now().Before(s.roomUntil) {
		s.roomLeft -= n
		return nil
	}
	s.roomLeft = 0
	room, ok := s.room()
	switch {
	case !ok:
	case room < n:
		return s.diskFull(room, n)
	case room-n >= spaceMargin:
		s.roomUntil, s.roomLeft = time.Now().Add(spaceCheck), (room-n)/8
	}
	return nil
}

const (
	spaceFactor = 4
	spaceMargin = 256 << 20
	spaceCheck  = 50 * time.Millisecond
)

// checkRoom refuses to write n bytes when fewer than n would be left
// above MinFree.
func (s *Store) checkRoom(n int64) error {
	if room, ok := s.room(); ok && room < n {
		return s.diskFull(room, n)
	}
	return nil
}

// room is the space the filesystem has above MinFree; ok is false when
// it cannot tell (let the write say), or MinFree is -1.
func (s *Store) room() (room int64, ok bool) {
	if s.minFree < 0 {
		return 0, false
	}
	var st unix.Statfs_t
	if err := unix.Statfs(s.dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail)*int64(st.Bsize) - s.minFree, true
}

func (s *Store) diskFull(room, n int64) error {
	return fmt.Errorf("%w (%d KB left, %d KB kept free)", ErrDiskFull, (room+s.minFree)>>10, (s.minFree+n)>>10)
}

// Tx is the view an operation has of its batch's transaction: it reads
// what earlier operations of the batch wrote. One Tx serves every
// operation of one attempt at a batch; a batch run again gets a new one.
type Tx struct {
	txn     *badger.Txn // Badger as applied, with this batch's own writes
	pending []*stagedBatch
	now     time.Time
	changes []change       // the final value of every key set or deleted, for the journal
	index   map[string]int // key -> its place in changes
	memo    map[string]any
	before  []func(*Tx) error
	after   []func()
	applied []func()
}

// newTx is a transaction for the next batch: Badger as applied, under the
// batches staged but not yet applied.
func (s *Store) newTx() *Tx {
	pending, txn := s.overlay.view(s.db())
	return &Tx{txn: txn, pending: pending, now: s.now().UTC(), index: map[string]int{}}
}

// lookup finds key in this batch's own writes or in a staged batch: found
// says whether either has it (then del says it was deleted).
func (t *Tx) lookup(key string) (val []byte, del, found bool) {
	if i, ok := t.index[key]; ok {
		return t.changes[i].val, t.changes[i].del, true
	}
	for i := len(t.pending) - 1; i >= 0; i-- {
		if c, ok := t.pending[i].vals[key]; ok {
			return c.val, c.del, true
		}
	}
	return nil, false, false
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

// AfterCommit runs fn once the batch's operations ran for good (a batch
// whose operation failed in the store is run again without it), on the
// committer's goroutine, before any later batch runs: what the batch made
// true may be remembered then, for the batches built on it. The batch
// becomes durable after that, in order; if it cannot, the store stops,
// and every later batch fails.
func (t *Tx) AfterCommit(fn func()) { t.after = append(t.after, fn) }

// AfterApply runs fn once the batch is durable and a reader outside the
// committer sees it (Read, Scan): to tell such readers that there is more
// to read. It runs on the third stage's goroutine, in order, and not at
// all for a batch that could not be made durable.
func (t *Tx) AfterApply(fn func()) { t.applied = append(t.applied, fn) }

// Now is the batch's time: every operation of a batch sees the same.
func (t *Tx) Now() time.Time { return t.now }

// GetRaw returns the bytes at key; it reports false when there is none.
// They are valid until the transaction ends.
func (t *Tx) GetRaw(key string) ([]byte, bool, error) {
	if val, del, found := t.lookup(key); found {
		return bytes.Clone(val), !del, nil
	}
	item, err := t.txn.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, &Error{err}
	}
	b, err := item.ValueCopy(nil)
	if err == nil {
		b, err = decodeValue(b)
	}
	if err != nil {
		return nil, false, &Error{err}
	}
	return b, true, nil
}

// Has reports whether key exists.
func (t *Tx) Has(key string) (bool, error) {
	if _, del, found := t.lookup(key); found {
		return !del, nil
	}
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

// Set stores b at key (compressed when that makes it smaller, once the
// batch is applied).
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
// fn returns false: Badger's, with this batch's own writes, merged with the
// staged batches'.
func (t *Tx) Keys(prefix, start string, fn func(key []byte) bool) {
	staged := t.stagedKeys(prefix, start) // sorted; del: the key is gone
	it := t.txn.NewIterator(iteratorOptions(prefix, false))
	defer it.Close()
	it.Seek([]byte(start))
	for {
		var k []byte
		fromTxn := it.ValidForPrefix([]byte(prefix))
		if fromTxn {
			k = it.Item().Key()
		}
		if len(staged) > 0 && (!fromTxn || staged[0].key <= string(k)) {
			s := staged[0]
			staged = staged[1:]
			if fromTxn && s.key == string(k) {
				it.Next()
			}
			if !s.del && !fn([]byte(s.key)) {
				return
			}
			continue
		}
		if !fromTxn {
			return
		}
		if !fn(k) {
			return
		}
		it.Next()
	}
}

// stagedKey is a key a staged batch set or deleted.
type stagedKey struct {
	key string
	del bool
}

// stagedKeys are the keys under prefix, from start on, that staged batches
// wrote and this batch did not (its own writes are in its transaction), in
// order, each as the newest staged batch left it.
func (t *Tx) stagedKeys(prefix, start string) []stagedKey {
	newest := map[string]bool{}
	for i := len(t.pending) - 1; i >= 0; i-- {
		for k, c := range t.pending[i].vals {
			if _, seen := newest[k]; seen || !strings.HasPrefix(k, prefix) || k < start {
				continue
			}
			if _, own := t.index[k]; own {
				continue
			}
			newest[k] = c.del
		}
	}
	out := make([]stagedKey, 0, len(newest))
	for k, del := range newest {
		out = append(out, stagedKey{k, del})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// Get decodes the JSON value at key into v; it reports false when there is
// none.
func (t *Tx) Get(key string, v any) (bool, error) {
	if val, del, found := t.lookup(key); found {
		if del {
			return false, nil
		}
		if err := json.Unmarshal(val, v); err != nil {
			return false, &Error{fmt.Errorf("decode %s: %w", key, err)}
		}
		return true, nil
	}
	return getValue(t.txn, key, v)
}

func getValue(txn *badger.Txn, key string, v any) (bool, error) {
	item, err := txn.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, &Error{err}
	}
	err = item.Value(func(b []byte) error {
		b, err := decodeValue(b)
		if err != nil {
			return err
		}
		return json.Unmarshal(b, v)
	})
	if err != nil {
		return false, &Error{fmt.Errorf("decode %s: %w", key, err)}
	}
	return true, nil
}
