package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/ledger/internal/store"
)

// Options configure a ledger (its store). The zero value is valid: a
// durable ledger that logs nowhere and refuses to write when its
// filesystem has less than 32 MB free.
type Options = store.Options

// DefaultMinFree is the free space the ledger's filesystem keeps: below
// it, writes fail with ErrDiskFull.
const DefaultMinFree = store.DefaultMinFree

// Errors of the ledger's store, for callers that branch on them.
var (
	ErrNotFound = store.ErrNotFound // an id the ledger does not know
	ErrDiskFull = store.ErrDiskFull // the ledger's filesystem is (nearly) full
	ErrClosed   = store.ErrClosed   // the ledger is closed
)

// IsLocked reports whether Open failed because another process (a
// running toolgate serve) holds the ledger.
func IsLocked(err error) bool { var e *store.LockedError; return errors.As(err, &e) }

// Ledger is an open ledger. Its methods are safe for concurrent use.
type Ledger struct {
	store    *store.Store
	head     chainHead     // the audit chain's head as last committed; the committer's
	appended chan struct{} // signalled after a batch extended the chain (Appended)
}

// Open opens (or creates) the ledger in dir. Only one process may hold a
// ledger: a second Open fails at once (IsLocked).
func Open(dir string, opts Options) (*Ledger, error) {
	s, err := store.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	l := &Ledger{store: s, appended: make(chan struct{}, 1)}
	if l.head, err = l.readHead(); err != nil {
		s.Close()
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	return l, nil
}

// Close waits for the writes already submitted and closes the ledger.
func (l *Ledger) Close() error { return l.store.Close() }

// tx is one operation's view of its batch: the store's transaction, with
// the audit chain (audit.go).
type tx struct {
	*store.Tx
	l *Ledger
}

// write runs fn as one operation of the store's next batch and returns
// once the batch is durable. fn's events extend the audit chain; its
// refusals come back with its result, their events committed all the same.
func write[T any](ctx context.Context, l *Ledger, fn func(*tx) (T, error)) (T, error) {
	return store.Write(ctx, l.store, func(st *store.Tx) (T, error) { return fn(&tx{st, l}) })
}

// named says which record was not found in the domain's words: the
// store's key ("a/apr_..."), an internal, never reaches a person.
func named(what, id string, err error) error {
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("no %s %s: %w", what, id, ErrNotFound)
	}
	return err
}

// read decodes the value at key into v, or returns ErrNotFound.
func (l *Ledger) read(key string, v any) error { return l.store.Read(key, v) }

// CompactStats says what a compaction did.
type CompactStats = store.CompactStats

// Compact gives back the disk of what is no longer current (versions
// written over, what was deleted or pruned): it writes what is current
// into new files and removes the old ones. It runs beside writes, which
// wait only while what changed meanwhile is copied.
func (l *Ledger) Compact(ctx context.Context) (CompactStats, error) { return l.store.Compact(ctx) }

// DiskUsage is the disk space the files of a ledger in dir take.
func DiskUsage(dir string) int64 { return store.DiskUsage(dir) }
