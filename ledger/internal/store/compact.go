package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/ristretto/v2/z"
)

// Compaction. Badger keeps every value in its value log, and a value
// written again (a call once decided, then run) or deleted (pruned) leaves
// its old version there until its value-log GC rewrites the file, which it
// does only for files its own compactions found mostly stale: in a ledger
// whose keys fit in one level of its tree that never happens, and nothing
// a prune removed was given back.
//
// So Compact writes what is current into a new Badger beside the old one
// and makes it the store's:
//
//  1. Beside writes, it copies every current value, as one transaction
//     pinned before the copy reads them, into a new Badger in the
//     subdirectory db-<n> of the store, which Badger's StreamWriter lays
//     out as tables holding nothing else, values and all, compressed in
//     blocks (copyOptions). It closes that Badger, and opens it again to
//     serve.
//  2. It holds the committer (writes wait in its queue, none fails), lets
//     every acknowledged batch reach Badger, and copies into the new Badger
//     every key changed since the pinned version, as it is now: set or
//     deleted, and syncs the new Badger's files.
//  3. It names the new Badger in the file CURRENT (written whole, then
//     renamed: the switch is atomic), starts the journal's next generation
//     (everything it held is in both Badgers) and lets the committer go on
//     with the new Badger.
//  4. It retires the old Badger once the readers still in it are done
//     (view), and removes its files.
//
// No open Badger's directory is ever renamed: Badger keeps making files
// in it by name. A store made before compaction existed has its Badger in
// the store's directory itself, without CURRENT; its first compaction
// moves it to db-1. A crash at any point leaves CURRENT naming a whole
// Badger; Open removes the others (removeRetired). Writes wait for steps 2
// and 3 only: a copy of what changed while step 1 ran, a sync and two
// renames (about 3 ms for a store of 40,000 values of 1 KB).

// testHookCompact, when set, is called at each step of a compaction
// (tests take the store's files as a crash would leave them there).
var testHookCompact func(step string)

// testHookOpen, when set, is called by Open between reading CURRENT and
// opening the Badger it names.
var testHookOpen func()

func compactStep(step string) {
	if testHookCompact != nil {
		testHookCompact(step)
	}
}

// CompactStats says what a compaction did.
type CompactStats struct {
	Before int64 `json:"bytes_before"` // bytes of the store's files before
	After  int64 `json:"bytes_after"`  // and after
}

// currentFile names the subdirectory that holds the store's Badger.
const currentFile = "CURRENT"

// badgerDir is where the Badger of the store in dir is.
func badgerDir(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, currentFile))
	if errors.Is(err, os.ErrNotExist) {
		return dir, nil // made before compaction existed
	}
	if err != nil {
		return "", err
	}
	name := strings.TrimSpace(string(b))
	if _, ok := generation(name); !ok {
		return "", fmt.Errorf("%s names %q, not a store's Badger: restore it from a backup", filepath.Join(dir, currentFile), name)
	}
	// A Badger is whole before CURRENT names it: Badger would make an
	// empty one where there is none, and Open remove the others.
	if _, err := os.Stat(filepath.Join(dir, name, "MANIFEST")); err != nil {
		return "", fmt.Errorf("%s names %s, which holds no Badger (%w): restore it from a backup", filepath.Join(dir, currentFile), name, err)
	}
	return filepath.Join(dir, name), nil
}

// generation is n of a Badger's subdirectory db-<n>.
func generation(name string) (uint64, bool) {
	rest, ok := strings.CutPrefix(name, "db-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(rest, 10, 64)
	return n, err == nil && n > 0 && strconv.FormatUint(n, 10) == rest
}

// autoCompactMin is the size under which a store is not compacted on its
// own (a variable for tests).
var autoCompactMin int64 = 64 << 20

// compactIfGrown starts a compaction beside writes when the store's files
// have doubled since the last one (or since it was opened), and take
// autoCompactMin or more: versions written over (a call's record is
// written again when it ran) are given back without a prune. A store that
// only grows by what is current is compacted each time it doubles: the
// cost of copying it stays a constant share of what was written. It is
// checked at each checkpoint of the journal.
func (s *Store) compactIfGrown() {
	if s.opts.NoAutoCompact {
		return
	}
	size := dirSize(s.dir)
	if size < autoCompactMin || size < 2*s.compactedSize.Load() || !s.autoCompacting.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.autoCompacting.Store(false)
		st, err := s.Compact(context.Background())
		switch {
		case errors.Is(err, ErrClosed):
		case err != nil:
			s.compactedSize.Store(st.Before) // not again before it doubles again
			s.log().Warn("the ledger's compaction failed; it is tried again when the ledger has doubled", "err", err)
		default:
			s.log().Info("compacted the ledger", "bytes_before", st.Before, "bytes_after", st.After)
		}
	}()
}

// Compact rewrites the store with only what is current (see above). It
// runs one at a time; a store in memory has nothing to give back.
func (s *Store) Compact(ctx context.Context) (CompactStats, error) {
	s.compacting.Lock()
	defer s.compacting.Unlock()
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return CompactStats{}, ErrClosed
	}
	st := CompactStats{Before: dirSize(s.dir)}
	if s.journal == nil {
		st.After = st.Before
		return st, nil
	}
	if err := s.brokenErr(); err != nil {
		return st, err
	}
	// The new Badger needs room for what is current, and the old one's
	// writes their margin meanwhile. A look of its own: what a look
	// vouches for (admit) is the committer's, read and written under
	// leading, which this goroutine does not hold.
	if err := s.checkRoom(0); err != nil {
		return st, fmt.Errorf("compact: %w", err)
	}
	old := s.cur.Load()
	n, _ := generation(filepath.Base(old.dir))
	next := filepath.Join(s.dir, "db-"+strconv.FormatUint(n+1, 10))
	if err := os.RemoveAll(next); err != nil {
		return st, fmt.Errorf("compact: %w", err)
	}
	// A transaction open from before the copy to the end of step 2 keeps
	// Badger from dropping what changed since: its own compactions drop a
	// delete marker, and every version under it, once no transaction reads
	// at an older version, and step 2 would then not see that the key
	// changed (the value step 1 copied would come back).
	pin := old.db.NewTransaction(false)
	since := pin.ReadTs() // step 1 copies what it reads
	ndb, err := openBadger(copyOptions(next, s.opts))
	if err != nil {
		pin.Discard()
		return st, fmt.Errorf("compact: %w", err)
	}
	switched := false
	err = s.copyCurrent(ctx, pin, ndb, next)
	if err == nil {
		// Closed, the copy is on disk; opened again, it is ready to serve
		// (values written from now on go to its value log), before writes
		// wait for step 2.
		err = ndb.Close()
		ndb = nil
		if err == nil {
			ndb, err = openBadger(badgerOptions(next, s.opts))
		}
		if err != nil {
			err = fmt.Errorf("compact: %w", err)
		}
	}
	if err == nil {
		compactStep("copied")
		switched, err = s.replace(ndb, next, since)
	}
	pin.Discard()
	if err != nil {
		if ndb != nil {
			ndb.Close()
		}
		if !switched { // once CURRENT names it, next is the store's Badger
			os.RemoveAll(next)
		}
		return st, err
	}
	compactStep("replaced")
	old.mu.Lock() // the readers still in it are done; later ones take the new
	if err := old.db.Close(); err != nil {
		s.log().Warn("compact: close the old Badger", "err", err)
	}
	if err := removeRetired(s.dir, s.cur.Load().dir); err != nil {
		s.log().Warn("compact: remove the old Badger", "err", err)
	}
	st.After = dirSize(s.dir)
	s.compactedSize.Store(st.After)
	return st, nil
}

// copyCurrent is step 1: every current value of db, as the pinned
// transaction reads it, into a new Badger in next, in key order through
// Badger's StreamWriter, copyChunk bytes at a time. (Not Badger's Stream:
// its producers read through transactions of their own and queue batches
// of up to 16 MB; a compaction of 100,000 calls held 120 MB more.)
func (s *Store) copyCurrent(ctx context.Context, pin *badger.Txn, ndb *badger.DB, next string) error {
	sw := ndb.NewStreamWriter()
	if err := sw.Prepare(); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	buf := z.NewBuffer(copyChunk+copyChunk/4, "ledger compaction")
	defer buf.Release()
	sent, read := 0, 0
	send := func() error {
		if buf.LenNoPadding() == 0 {
			return nil
		}
		// Badger writes the copy through memory maps: a write into a full
		// filesystem would kill the process. The copy stops while the
		// store's own writes still have their margin, and the new
		// Badger's tables theirs.
		if err := s.checkRoom(int64(buf.LenNoPadding()) + s.minFree); err != nil {
			return err
		}
		if err := sw.Write(buf); err != nil {
			return err
		}
		buf.Reset()
		// The pages the copy wrote through the new Badger's maps stay
		// resident while they are dirty: sync them, then let them go.
		if sent++; sent%8 == 0 {
			if err := syncBadger(next); err != nil {
				return err
			}
			releaseMapped(next)
		}
		return nil
	}
	// Each stream of the StreamWriter builds its own tables: a new stream
	// every copyTableRaw bytes bounds what a table holds before it is
	// compressed (Badger ends a table at 2 MB compressed, which can be
	// hundreds of MB of a ledger's values, all held while it is built).
	stream, inStream := uint32(1), 0
	it := pin.NewIterator(badger.IteratorOptions{PrefetchValues: false})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		if err := ctx.Err(); err != nil {
			sw.Cancel()
			return fmt.Errorf("compact: %w", err)
		}
		item := it.Item()
		val, err := item.ValueCopy(nil)
		if err != nil {
			sw.Cancel()
			return fmt.Errorf("compact: %w", err)
		}
		// Into the tables as written: zstd compresses them there, a block
		// at a time, far better than one by one (copyOptions).
		if raw, err := decodeValue(val); err == nil && len(raw) <= copyInlineMax {
			val = raw
		}
		// Each value read maps its page of the old value log, and the
		// kernel maps the cached pages around it too (fault-around): in
		// key order the copy would soon have every value-log file
		// resident (a compaction of 270 MB: 295 MB of maps). Let them go
		// every 2,048 values (42 MB; each release walks every map, and
		// every 256 values made the copy four times slower).
		if read++; read%2048 == 0 {
			releaseMapped(s.cur.Load().dir)
		}
		if inStream >= copyTableRaw {
			badger.KVToBuffer(&pb.KV{StreamId: stream, StreamDone: true}, buf)
			stream, inStream = stream+1, 0
		}
		inStream += len(val) + int(item.KeySize())
		kv := &pb.KV{Key: item.KeyCopy(nil), Value: val, UserMeta: []byte{item.UserMeta()},
			Version: item.Version(), ExpiresAt: item.ExpiresAt(), StreamId: stream}
		badger.KVToBuffer(kv, buf)
		if buf.LenNoPadding() >= copyChunk {
			if err := send(); err != nil {
				sw.Cancel()
				return fmt.Errorf("compact: %w", err)
			}
		}
	}
	if err := send(); err != nil {
		sw.Cancel()
		return fmt.Errorf("compact: %w", err)
	}
	if err := sw.Flush(); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}

// copyChunk is what the copy writes at a time, between two looks at the
// free space.
const copyChunk = 1 << 20

// copyTableRaw bounds what one table of a compaction holds, uncompressed.
const copyTableRaw = 2 << 20

// replace is steps 2 and 3: ndb, open in next, becomes the store's
// Badger. Once CURRENT names it it is the store's (switched): a failure
// after that stops the store until it is opened again, which opens it.
func (s *Store) replace(ndb *badger.DB, next string, since uint64) (switched bool, err error) {
	s.leading.Lock()
	defer s.leading.Unlock()
	s.overlay.drained() // the later stages are idle: every batch is in Badger
	if err := s.brokenErr(); err != nil {
		return false, err
	}
	if err := copySince(s.db(), ndb, since); err != nil {
		return false, err
	}
	// Its memtable's log, value log and manifest: what the copies wrote
	// is on disk before CURRENT names it.
	if err := syncBadger(next); err != nil {
		return false, fmt.Errorf("compact: %w", err)
	}
	compactStep("caught up")
	if err := writeCurrent(s.dir, filepath.Base(next)); err != nil {
		// The rename may have happened (a failed sync of the directory):
		// whether CURRENT names next is what counts.
		cur, cerr := badgerDir(s.dir)
		switched = cerr != nil || cur == next
		if switched {
			s.setBroken(fmt.Errorf("the ledger stopped during a compaction (%v); restart toolgate serve", err))
		}
		return switched, fmt.Errorf("compact: %w", err)
	}
	compactStep("switched")
	fail := func(err error) error {
		err = fmt.Errorf("compact: %w", err)
		s.setBroken(fmt.Errorf("the ledger stopped during a compaction (%v); restart toolgate serve", err))
		return err
	}
	// What the journal holds is in both Badgers: the next batch starts
	// the next generation. (Applied again after a crash, it would only
	// set keys to what they are.)
	if err := s.journal.recycle(s.journal.gen + 1); err != nil {
		return true, fail(err)
	}
	s.sinceCheckpoint = 0
	s.cur.Store(&handle{db: ndb, dir: next})
	return true, nil
}

// copySince is step 2: every key of db changed after since, as it is now,
// into the new Badger ndb.
func copySince(db, ndb *badger.DB, since uint64) error {
	wb := ndb.NewWriteBatch()
	defer wb.Cancel()
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{AllVersions: true, SinceTs: since})
		defer it.Close()
		var last []byte
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			if last != nil && bytes.Equal(item.Key(), last) {
				continue // an older version of the key just copied
			}
			last = item.KeyCopy(last[:0])
			if item.IsDeletedOrExpired() {
				if err := wb.Delete(item.KeyCopy(nil)); err != nil {
					return err
				}
				continue
			}
			val, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			if err := wb.Set(item.KeyCopy(nil), val); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = wb.Flush()
	}
	if err != nil {
		return fmt.Errorf("compact: copy what changed meanwhile: %w", err)
	}
	return nil
}

// writeCurrent makes CURRENT name the Badger in the subdirectory name,
// durably and at once: a crash leaves the old name or the new.
func writeCurrent(dir, name string) error {
	tmp := filepath.Join(dir, currentFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(name + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, currentFile))
	}
	if err == nil {
		err = syncDir(dir)
	}
	return err
}

// removeRetired removes from the store in dir every Badger but the one in
// current: the subdirectories db-<n> of other generations (a compaction
// that did not finish, or one replaced), and Badger's files in dir itself
// once its Badger moved to a subdirectory.
func removeRetired(dir, current string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		p := filepath.Join(dir, name)
		switch {
		case p == current:
		case e.IsDir():
			if _, ok := generation(name); ok {
				if err := os.RemoveAll(p); err != nil {
					return err
				}
			}
		case current != dir && isBadgerFile(name):
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	if err := os.Remove(filepath.Join(dir, currentFile+".tmp")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// isBadgerFile reports whether name is one of the files Badger makes in
// its directory.
func isBadgerFile(name string) bool {
	switch name {
	case "MANIFEST", "DISCARD", "KEYREGISTRY", "LOCK":
		return true
	}
	for _, ext := range []string{".sst", ".vlog", ".mem"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return strings.HasPrefix(name, "MANIFEST") || strings.HasPrefix(name, "KEYREGISTRY")
}

// dirSize is the disk space the files in dir take (allocated blocks, as
// du counts them: Badger's files are made larger than what they hold).
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				if st, ok := info.Sys().(*syscall.Stat_t); ok {
					n += st.Blocks * 512
				}
			}
		}
		return nil
	})
	return n
}

// DiskUsage is the disk space the files of a store in dir take.
func DiskUsage(dir string) int64 { return dirSize(dir) }
