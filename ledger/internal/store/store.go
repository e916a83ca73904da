// Package store is the ledger's storage engine: Badger, made durable one
// batch at a time through its own journal, with one committer that batches
// concurrent writes into one transaction (group commit), in two stages: one
// runs a batch's operations while the other makes the batch before it
// durable and applies it (commit.go, overlay.go). An operation is a
// function of the transaction that returns a typed result; it is
// acknowledged only once its batch is durable. Operations must be
// pure functions of the transaction: a batch whose store write fails is run
// again without the failing operation.
//
// Durable means in the journal, fdatasynced: Badger runs without
// SyncWrites (two syncs a commit) and the journal, applied again at Open,
// covers what a crash of the machine could take from it (journal.go).
// After a checkpoint the store drops Badger's clean mapped pages from its
// resident memory (resident.go), and it refuses to write into a nearly
// full filesystem (Badger's memory-mapped writes would kill the process).
//
// It knows keys and bytes, not what they mean: the domain records and the
// audit chain are package ledger's. Only package ledger imports it.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Options configure a store. The zero value is valid: a durable store that
// logs nowhere.
type Options struct {
	// InMemory keeps everything in memory (tests); dir is ignored.
	InMemory bool
	// Logger receives Badger's warnings and errors.
	Logger *slog.Logger
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
	// MaxBatch bounds how many operations share one transaction; 256 when 0.
	MaxBatch int
	// NoAutoCompact: the store is compacted only when Compact is called,
	// never on its own when its files have doubled (compact.go).
	NoAutoCompact bool
	// MinFree is the free space the filesystem must keep; below it writes
	// fail with ErrDiskFull instead of being tried. Badger writes through
	// memory-mapped files, and a write into a full filesystem there kills
	// the process (SIGBUS). DefaultMinFree when 0; -1 never checks.
	MinFree int64
}

// DefaultMinFree is the free space kept by default: more than a memtable
// and a value log chunk can need.
const DefaultMinFree = 32 << 20

// ErrDiskFull is returned when the store's filesystem is (nearly) full.
var ErrDiskFull = errors.New("the ledger's filesystem is full")

// ErrClosed is returned by operations on a closed store.
var ErrClosed = errors.New("ledger is closed")

// ErrNotFound is returned for a key the store does not hold.
var ErrNotFound = errors.New("not found")

// stagedBatches is how many staged batches may wait for the committer's
// second stage, which makes them durable together (persistLoop), and how
// many groups of durable ones for its third.
const stagedBatches = 16

// Store is an open store. Its methods are safe for concurrent use.
type Store struct {
	cur       atomic.Pointer[handle] // the open Badger, replaced by Compact
	opts      Options
	dir       string
	minFree   int64
	roomUntil time.Time // until when the last look at the filesystem vouches for roomLeft more bytes (admit; under leading)
	roomLeft  int64
	now       func() time.Time
	maxBatch  int

	mu      sync.RWMutex // guards closed against submissions
	closed  bool
	ops     chan *op
	leading sync.Mutex        // held while a batch runs its first stage
	staged  chan *stagedBatch // from the committer's first stage to its second
	// persisted: from its second stage to its third.
	persisted chan []*stagedBatch
	// unpersisted counts the batches staged and not yet handed to the
	// third stage.
	unpersisted atomic.Int64
	done        chan struct{}
	overlay

	compacting     sync.Mutex   // one Compact at a time, and none once closed
	compactedSize  atomic.Int64 // the files' size after the last Compact, or at Open
	autoCompacting atomic.Bool  // compactIfGrown started one, not yet done

	brokenMu sync.Mutex
	broken   error // a batch is in the journal but not in Badger: reopen to apply it

	// Owned by the committer's second stage (or its first, when it makes
	// a batch durable itself):
	journal         *journal // nil in memory
	sinceCheckpoint int64    // bytes (uncompressed) written since the last checkpoint
}

// Open opens (or creates) the store in dir. Badger takes a lock on the
// directory: a second process opening it fails at once with a
// *LockedError.
func Open(dir string, opts Options) (*Store, error) {
	bdir := dir
	if !opts.InMemory {
		dir = filepath.Clean(dir)
		var err error
		if bdir, err = badgerDir(dir); err != nil {
			return nil, fmt.Errorf("open ledger: %w", err)
		}
	}
	if testHookOpen != nil {
		testHookOpen()
	}
	db, err := openBadger(badgerOptions(bdir, opts))
	if err != nil {
		var locked *LockedError
		if errors.As(err, &locked) {
			locked.Dir = dir // the store's, not its subdirectory's
		}
		return nil, err
	}
	if !opts.InMemory {
		// A compaction of the process that holds the store may have named
		// another Badger, and let this one go, since CURRENT was read:
		// the lock taken is then not the store's.
		again, err := badgerDir(dir)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("open ledger: %w", err)
		}
		if again != bdir {
			db.Close()
			return nil, &LockedError{Dir: dir, Err: fmt.Errorf("%s names another Badger since it was read: the ledger is compacted by the process that holds it", currentFile)}
		}
		// Badger's lock is held: no other process uses what is removed.
		if err := removeRetired(dir, bdir); err != nil {
			db.Close()
			return nil, fmt.Errorf("open ledger: remove a Badger a compaction left: %w", err)
		}
	}
	s := &Store{opts: opts, dir: dir, minFree: opts.MinFree, now: opts.Now, maxBatch: opts.MaxBatch,
		ops: make(chan *op, 1024), staged: make(chan *stagedBatch, stagedBatches),
		persisted: make(chan []*stagedBatch, stagedBatches), done: make(chan struct{})}
	s.cur.Store(&handle{db: db, dir: bdir})
	if !opts.InMemory {
		s.compactedSize.Store(dirSize(dir))
	}
	if s.minFree == 0 {
		s.minFree = DefaultMinFree
	}
	if opts.InMemory {
		s.minFree = -1
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.maxBatch <= 0 {
		s.maxBatch = 256
	}
	if !opts.InMemory {
		if s.journal, err = recoverJournal(db, dir, bdir); err != nil {
			db.Close()
			return nil, fmt.Errorf("open ledger: %w", err)
		}
	}
	go s.commitLoop()
	go s.persistLoop()
	go s.applyLoop()
	return s, nil
}

// recoverJournal applies what the journals hold (batches a crash of the
// machine may have kept from Badger), makes it durable, and goes on with
// the newest journal as the next generation (or a new one).
func recoverJournal(db *badger.DB, dir, bdir string) (*journal, error) {
	gens, _, err := replay(db, dir)
	if err != nil {
		return nil, err
	}
	if err := syncBadger(bdir); err != nil {
		return nil, err
	}
	var j *journal
	if len(gens) == 0 {
		j, err = createJournal(dir, 1, journalSize)
	} else {
		last := gens[len(gens)-1]
		j, err = openJournal(dir, last, last+1)
	}
	if err != nil {
		return nil, err
	}
	if err := removeJournalsBefore(dir, j.gen); err != nil {
		j.close()
		return nil, err
	}
	return j, nil
}

// openBadger opens a Badger.
func openBadger(o badger.Options) (*badger.DB, error) {
	db, err := badger.Open(o)
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, &LockedError{Dir: o.Dir, Err: err}
		}
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	return db, nil
}

// handle is an open Badger. Readers outside the committer hold it shared
// (view); a compaction that replaces it waits for them before closing it.
type handle struct {
	db  *badger.DB
	dir string // its files: the store's directory, or a subdirectory (compact.go)
	mu  sync.RWMutex
}

// db is the open Badger, for the committer: a compaction replaces it only
// while the committer is held.
func (s *Store) db() *badger.DB { return s.cur.Load().db }

// view runs fn in a read-only transaction of the open Badger, which a
// compaction does not close under it. It never waits for a compaction: a
// reader that finds the handle being retired takes the new one, so a
// reader may nest another.
func (s *Store) view(fn func(txn *badger.Txn) error) error {
	for {
		h := s.cur.Load()
		if h.mu.TryRLock() {
			defer h.mu.RUnlock()
			return h.db.View(fn)
		}
		// Being retired: the compaction stored its successor first.
		runtime.Gosched()
	}
}

// log is where the store logs: Options.Logger, or nowhere.
func (s *Store) log() *slog.Logger {
	if s.opts.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.opts.Logger
}

// LockedError is returned by Open when another process holds the store.
type LockedError struct {
	Dir string
	Err error
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("ledger %s is in use by another process (a running toolgate serve?)", e.Dir)
}

func (e *LockedError) Unwrap() error { return e.Err }

// badgerOptions are tuned for a small per-user daemon: small memtables and
// caches, and Badger's logging routed to slog. Values of 64 bytes or more
// (every record and event, compressed: codec.go) are written to the value
// log, so the tables Badger builds as it goes hold keys and pointers only:
// its own compactions then need little memory (100k calls of 1 KB: about
// 30 MB of heap instead of 100-340 MB) and writes stay fast. What the
// store's compaction copied is in tables, values and all, compressed
// (copyOptions): tables are compressed with zstd, so that those Badger
// rewrites stay so. Badger does not sync its writes: the journal makes
// each batch durable first, with one fdatasync instead of Badger's two
// (see journal.go).
func badgerOptions(dir string, opts Options) badger.Options {
	b := badger.DefaultOptions(dir)
	if opts.InMemory {
		b = badger.DefaultOptions("").WithInMemory(true)
	}
	return b.
		WithSyncWrites(false).
		WithLogger(slogAdapter{opts.Logger}).
		WithMemTableSize(4 << 20).
		WithNumMemtables(2).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(8).
		WithBaseTableSize(2 << 20).
		WithBaseLevelSize(8 << 20).
		WithBlockCacheSize(4 << 20).
		WithIndexCacheSize(2 << 20).
		WithValueThreshold(64).
		WithValueLogFileSize(32 << 20).
		WithNumCompactors(2).
		WithNumGoroutines(2).
		WithCompression(options.ZSTD).
		// Badger has one zstd encoder a process, made at the level of the
		// first table it compresses: every Badger asks for the same.
		WithZSTDCompressionLevel(zstdLevel).
		WithDetectConflicts(false) // one committer: there is nothing to conflict with
}

// copyOptions are the options of the Badger a compaction writes (step 1),
// until it is opened again with badgerOptions to serve: values of up to
// copyInlineMax bytes, as they were written (not compressed one by one),
// go into its tables, whose 64 KB blocks zstd compresses together, the
// calls and events of a ledger being much alike (100k calls with 1 KB
// inputs: 3.1 KB a call in the value log, under 1 KB so). Larger values
// stay in its value log. A table holds copyTableRaw bytes at most
// (compact.go), for which its builder's first buffer has room: Badger's
// StreamWriter sizes it for a table of the last level, which would be
// 64 MB (and take twice that in memory while built).
func copyOptions(dir string, opts Options) badger.Options {
	b := badgerOptions(dir, opts).
		WithValueThreshold(copyInlineMax).
		WithBlockSize(64 << 10).
		WithBaseTableSize(copyTableRaw)
	b.TableSizeMultiplier = 1
	return b
}

// zstdLevel is the level of zstd of every table (copyOptions' above all).
const zstdLevel = 3

// copyInlineMax is the largest value a compaction puts in a table.
const copyInlineMax = 16 << 10

// Close stops accepting operations, waits for those already submitted, and
// closes Badger.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.ops)
	s.mu.Unlock()
	<-s.done
	s.compacting.Lock() // a compaction under way finishes first
	defer s.compacting.Unlock()
	return s.closeDB()
}

// closeDB closes Badger, which makes everything it holds durable, and
// then the journal, which is no longer needed unless a batch never
// reached Badger.
func (s *Store) closeDB() error {
	if err := s.db().Close(); err != nil {
		return fmt.Errorf("close ledger: %w", err)
	}
	if s.journal == nil {
		return nil
	}
	defer s.journal.close()
	if s.brokenErr() != nil {
		return nil // the next Open applies it
	}
	// Badger holds it all now: what the journal holds is stale.
	if err := s.journal.recycle(s.journal.gen + 1); err != nil {
		return fmt.Errorf("close ledger: %w", err)
	}
	return nil
}

// slogAdapter routes Badger's log lines to slog; INFO and DEBUG lines are
// dropped, they are Badger's own housekeeping.
type slogAdapter struct{ log *slog.Logger }

func (a slogAdapter) Errorf(f string, args ...any) { a.emit(slog.LevelError, f, args) }

func (a slogAdapter) Warningf(f string, args ...any) { a.emit(slog.LevelWarn, f, args) }

func (a slogAdapter) Infof(string, ...any) {}

func (a slogAdapter) Debugf(string, ...any) {}

func (a slogAdapter) emit(level slog.Level, f string, args []any) {
	if a.log == nil {
		return
	}
	a.log.Log(context.Background(), level, strings.TrimSpace(fmt.Sprintf(f, args...)), "component", "badger")
}
