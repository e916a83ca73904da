package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Read decodes the JSON value at key into v, or returns ErrNotFound. It
// reads what is committed, outside any batch (every write acknowledged
// before it is).
func (s *Store) Read(key string, v any) error {
	s.overlay.readable()
	return s.view(func(txn *badger.Txn) error {
		found, err := getValue(txn, key, v)
		if err == nil && !found {
			err = fmt.Errorf("%s: %w", key, ErrNotFound)
		}
		return err
	})
}

// ReadRaw returns the bytes at key, or ErrNotFound.
func (s *Store) ReadRaw(key string) ([]byte, error) {
	s.overlay.readable()
	var out []byte
	err := s.view(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(key))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return fmt.Errorf("%s: %w", key, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if out, err = item.ValueCopy(nil); err != nil {
			return err
		}
		out, err = decodeValue(out)
		return err
	})
	return out, err
}

func iteratorOptions(prefix string, values bool) badger.IteratorOptions {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = []byte(prefix)
	opts.PrefetchValues = values
	opts.PrefetchSize = 16
	return opts
}

// Scan calls fn with every key and value under prefix from the key start
// on, in key order, in one consistent view; an error from fn stops it and
// is returned.
func (s *Store) Scan(ctx context.Context, prefix, start string, fn func(key, val []byte) error) error {
	s.overlay.readable()
	return s.view(func(txn *badger.Txn) error { return scanTxn(ctx, txn, prefix, start, fn) })
}

// ScanFunc is Scan, in a view.
type ScanFunc func(prefix, start string, fn func(key, val []byte) error) error

// View calls fn with a scan whose every call reads one consistent view:
// the store as it was when View began, whatever is written meanwhile.
func (s *Store) View(ctx context.Context, fn func(scan ScanFunc) error) error {
	s.overlay.readable()
	return s.view(func(txn *badger.Txn) error {
		return fn(func(prefix, start string, f func(key, val []byte) error) error {
			return scanTxn(ctx, txn, prefix, start, f)
		})
	})
}

func scanTxn(ctx context.Context, txn *badger.Txn, prefix, start string, fn func(key, val []byte) error) error {
	it := txn.NewIterator(iteratorOptions(prefix, true))
	defer it.Close()
	for it.Seek([]byte(start)); it.ValidForPrefix([]byte(prefix)); it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		item := it.Item()
		val, err := item.ValueCopy(nil)
		if err == nil {
			val, err = decodeValue(val)
		}
		if err != nil {
			return err
		}
		if err := fn(item.KeyCopy(nil), val); err != nil {
			return err
		}
	}
	return nil
}
