package store

// The journal is how a batch becomes durable with one fdatasync.
//
// With SyncWrites, Badger syncs two files per commit (its value log and
// its WAL), which held one writer to about half of what the disk can do.
// The ledger runs Badger without SyncWrites instead and, for every batch,
// first appends the batch's changes (the final value of every key it sets,
// every key it deletes) to the journal and fdatasyncs it; only then does it
// commit the batch to Badger and acknowledge it. After a crash of the
// process nothing is lost either way (the kernel holds Badger's pages);
// after a crash of the machine, the journal holds every acknowledged batch
// that Badger may have lost, and Open applies them again. Applying a batch
// twice is harmless: it sets keys to values, in the order they were
// committed.
//
// The journal is the file journal-<generation>.wal beside Badger's files.
// It is written full of zeros once, when it is made, and then used again
// and again: a sync after overwriting blocks that exist costs two thirds of
// a sync that must allocate them. A record is
//
//	length  uint32 LE, of the payload
//	crc     uint32 LE, CRC-32C of the payload
//	payload generation uint64 LE, seq uint64 LE, then for each change:
//	        op byte (1 set, 2 delete), key length uint32 LE, key, and for a
//	        set value length uint32 LE, value
//
// Records are numbered from 1 in each generation. One that is cut short,
// fails its checksum, belongs to another generation (what an earlier
// generation left in the file) or is out of sequence ends the journal: it
// was never acknowledged, or a checkpoint already put it in Badger. At a
// checkpoint (the journal is full, or the ledger is opened or closed),
// every Badger file that may hold unsynced pages is fsynced (its tables and
// manifest Badger always syncs itself), and the file is renamed to the next
// generation, durably, before anything is written to it again.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"golang.org/x/sys/unix"
)

// journalSize is a journal's size when its records are small: about 2,500
// gated calls between checkpoints.
const journalSize = 8 << 20

const (
	opSet    = 1
	opDelete = 2
)

// change is one key a batch sets (or deletes).
type change struct {
	key, val []byte
	del      bool
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type journal struct {
	dir    string
	gen    uint64
	f      *os.File
	off    int64
	size   int64
	seq    uint64
	buf    []byte
	failed error // a sync failed: what the file holds is unknown
}

func journalPath(dir string, gen uint64) string {
	return filepath.Join(dir, fmt.Sprintf("journal-%d.wal", gen))
}

// journals lists the generations of the journals in dir, oldest first.
func journals(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var gens []uint64
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "journal-") || !strings.HasSuffix(name, ".wal") {
			continue
		}
		if g, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, "journal-"), ".wal"), 10, 64); err == nil {
			gens = append(gens, g)
		}
	}
	sort.Slice(gens, func(i, j int) bool { return gens[i] < gens[j] })
	return gens, nil
}

// createJournal makes the journal of generation gen, of at least size
// bytes, written full of zeros.
func createJournal(dir string, gen uint64, size int64) (*journal, error) {
	path := journalPath(dir, gen)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	size = max(size, journalSize)
	zeros := make([]byte, 1<<20)
	for off := int64(0); off < size && err == nil; off += int64(len(zeros)) {
		_, err = f.WriteAt(zeros[:min(int64(len(zeros)), size-off)], off)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("journal: %w", err)
	}
	return &journal{dir: dir, gen: gen, f: f, size: size}, nil
}

// openJournal opens a journal made before, as generation gen.
func openJournal(dir string, from, gen uint64) (*journal, error) {
	f, err := os.OpenFile(journalPath(dir, from), os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: %w", err)
	}
	j := &journal{dir: dir, gen: from, f: f, size: info.Size()}
	if err := j.recycle(gen); err != nil {
		f.Close()
		return nil, err
	}
	return j, nil
}

// recycle makes the journal generation gen, empty: what it holds is stale
// from now on. The rename is durable before anything new is written, or a
// crash could leave new records under the old generation's name.
func (j *journal) recycle(gen uint64) error {
	if err := os.Rename(journalPath(j.dir, j.gen), journalPath(j.dir, gen)); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := syncDir(j.dir); err != nil {
		return err
	}
	j.gen, j.off, j.seq = gen, 0, 0
	return nil
}

// fits reports whether a record of n payload bytes fits.
func (j *journal) fits(n int) bool { return j.off+8+int64(n) <= j.size }

// append writes a record (from encode) and makes it durable.
func (j *journal) append(payload []byte) error {
	rec := make([]byte, 8, 8+len(payload))
	binary.LittleEndian.PutUint32(rec[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(rec[4:], crc32.Checksum(payload, castagnoli))
	rec = append(rec, payload...)
	if _, err := j.f.WriteAt(rec, j.off); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := unix.Fdatasync(int(j.f.Fd())); err != nil {
		j.failed = fmt.Errorf("journal: sync: %w", err)
		return j.failed
	}
	j.off += int64(len(rec))
	j.seq++
	return nil
}

// encode is the payload of the next record: changes, in order.
func (j *journal) encode(changes []change) []byte {
	b := j.buf[:0]
	b = binary.LittleEndian.AppendUint64(b, j.gen)
	b = binary.LittleEndian.AppendUint64(b, j.seq+1)
	for _, c := range changes {
		if c.del {
			b = append(b, opDelete)
			b = binary.LittleEndian.AppendUint32(b, uint32(len(c.key)))
			b = append(b, c.key...)
			continue
		}
		b = append(b, opSet)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(c.key)))
		b = append(b, c.key...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(c.val)))
		b = append(b, c.val...)
	}
	j.buf = b
	return b
}

func (j *journal) close() error { return j.f.Close() }

// readJournal returns the changes of every whole record of generation
// gen in a journal, in order; it stops at the first record that is not
// one, reading no further than it must.
func readJournal(path string, gen uint64) ([][]change, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var batches [][]change
	var head [8]byte
	for off, seq := int64(0), uint64(1); ; seq++ {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			break
		}
		n := int64(binary.LittleEndian.Uint32(head[0:]))
		if n < 16 || off+8+n > info.Size() {
			break
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			break
		}
		if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(head[4:]) ||
			binary.LittleEndian.Uint64(payload) != gen || binary.LittleEndian.Uint64(payload[8:]) != seq {
			break
		}
		changes, err := decodeChanges(payload[16:])
		if err != nil {
			break
		}
		batches = append(batches, changes)
		off += 8 + n
	}
	return batches, nil
}

func decodeChanges(b []byte) ([]change, error) {
	var out []change
	next := func() ([]byte, error) {
		if len(b) < 4 {
			return nil, io.ErrUnexpectedEOF
		}
		n := int(binary.LittleEndian.Uint32(b))
		if len(b) < 4+n {
			return nil, io.ErrUnexpectedEOF
		}
		v := b[4 : 4+n]
		b = b[4+n:]
		return v, nil
	}
	for len(b) > 0 {
		op := b[0]
		b = b[1:]
		key, err := next()
		if err != nil {
			return nil, err
		}
		switch op {
		case opDelete:
			out = append(out, change{key: key, del: true})
		case opSet:
			val, err := next()
			if err != nil {
				return nil, err
			}
			out = append(out, change{key: key, val: val})
		default:
			return nil, errors.New("journal: unknown change")
		}
	}
	return out, nil
}

// replay applies every journal in dir to Badger, oldest first, and
// returns the generations it found.
func replay(db *badger.DB, dir string) (gens []uint64, applied int, err error) {
	gens, err = journals(dir)
	if err != nil {
		return nil, 0, err
	}
	for _, gen := range gens {
		batches, err := readJournal(journalPath(dir, gen), gen)
		if err != nil {
			return nil, applied, err
		}
		for _, changes := range batches {
			wb := db.NewWriteBatch()
			for _, c := range changes {
				if c.del {
					err = wb.Delete(c.key)
				} else {
					err = wb.Set(c.key, c.val)
				}
				if err != nil {
					wb.Cancel()
					return nil, applied, fmt.Errorf("journal replay: %w", err)
				}
			}
			if err := wb.Flush(); err != nil {
				return nil, applied, fmt.Errorf("journal replay: %w", err)
			}
			applied++
		}
	}
	return gens, applied, nil
}

// syncBadger makes everything Badger holds durable: the files it writes
// without syncing when SyncWrites is off (value logs, memtable WALs, its
// discard stats), and the directory. A file Badger removes meanwhile (a
// flushed memtable) is already in a table, which Badger syncs itself.
func syncBadger(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasSuffix(name, ".sst") || strings.HasPrefix(name, "journal-") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("checkpoint: sync %s: %w", name, err)
		}
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// removeJournalsBefore removes the journals older than gen: a checkpoint
// made what they hold durable in Badger.
func removeJournalsBefore(dir string, gen uint64) error {
	gens, err := journals(dir)
	if err != nil {
		return err
	}
	removed := false
	for _, g := range gens {
		if g < gen {
			if err := os.Remove(journalPath(dir, g)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			removed = true
		}
	}
	if !removed {
		return nil
	}
	return syncDir(dir)
}
