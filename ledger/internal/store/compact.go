package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/dgraph-io/badger/v4"
)

// Compaction. Badger keeps every value in its value log, and a value
// written again (a call once decided, then run) or deleted (pruned) leaves
// its old version there. Compact has Badger drop from its tables the
// versions no longer current (Flatten) and rewrite the value-log files
// mostly made of them (value-log GC). It runs beside writes.
//
// Badger's value-log GC writes the values it moves without syncing them
// and then deletes the old file: a crash of the machine in between would
// lose them, and the journal does not hold them (they were written long
// ago). So Compact holds an iterator open while GC runs (Badger then only
// marks the old files for deletion), syncs Badger's files, and only then
// lets the files go.
//
// It does not give much back yet. Flatten compacts only when the tree's
// tables are in more than one level, and the value-log GC picks the files
// to rewrite by the discard statistics that compactions keep; in a ledger
// whose keys fit in one level (at least up to the 40,000 values of 1 KB
// of TestCompactKeepsWhatIsCurrent) neither happens, and the value log
// keeps the stale versions until Badger compacts on its own. What keeps a
// ledger's disk small today is compression (codec.go) and events stored
// without their prev_hash. Reclaiming the space of what prune deletes
// needs a compaction that does not depend on Badger's statistics (a
// rewrite of the live values into new files).

// CompactStats says what a compaction did.
type CompactStats struct {
	Before     int64 `json:"bytes_before"` // bytes of the store's files before
	After      int64 `json:"bytes_after"`  // and after
	ValueFiles int   `json:"value_files_rewritten"`
}

// Compact packs the store (see above).
func (s *Store) Compact(ctx context.Context) (CompactStats, error) {
	st := CompactStats{Before: dirSize(s.dir)}
	s.overlay.readable()
	if err := s.db.Flatten(1); err != nil {
		return st, fmt.Errorf("compact: %w", err)
	}
	var err error
	if st.ValueFiles, err = s.valueLogGC(ctx); err != nil {
		return st, err
	}
	st.After = dirSize(s.dir)
	return st, nil
}

// valueLogGC rewrites the value-log files that are mostly versions no
// longer current, and removes the old files once what was moved out of
// them is synced.
func (s *Store) valueLogGC(ctx context.Context) (int, error) {
	txn := s.db.NewTransaction(false)
	it := txn.NewIterator(badger.IteratorOptions{}) // holds the old files until the sync
	n := 0
	var err error
	for ctx.Err() == nil {
		if err = s.db.RunValueLogGC(0.5); err != nil {
			break
		}
		n++
	}
	if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrGCInMemoryMode) {
		err = nil
	}
	if n > 0 && s.journal != nil {
		if serr := syncBadger(s.dir); serr != nil && err == nil {
			err = serr
		}
	}
	if err != nil {
		// Keep the old files: closing the iterator would delete them
		// before what was moved out of them is known to be on disk.
		return n, fmt.Errorf("compact: value-log GC: %w", err)
	}
	it.Close()
	txn.Discard()
	return n, nil
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
