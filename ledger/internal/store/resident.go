package store

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Badger reads and writes its value log through shared memory maps, and
// every page it touched stays in this process's resident set although it
// is only page cache: 100k calls left about 290 MB of value-log pages
// mapped beside 58 MB of heap. After a checkpoint those pages are clean,
// and the ledger has the kernel reclaim them (MADV_PAGEOUT): a later read
// maps them back from the file.
//
// Not MADV_DONTNEED: the maps are found by address in /proc/self/maps,
// and Badger may unmap a file (a flushed memtable, a table compacted
// away) between that read and the madvise. Should the address then be
// reused by anonymous memory (the Go heap, a buffer), MADV_DONTNEED would
// zero it; MADV_PAGEOUT never discards data, whatever is mapped there. A
// kernel older than 5.4 refuses it, and the pages stay.

// mapped are the files of Badger's that it maps shared: value logs,
// memtable WALs and tables.
var mapped = []string{".vlog", ".mem", ".sst"}

// releaseMapped drops the resident pages of Badger's shared maps of its
// files in dir.
func releaseMapped(dir string) error {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 7f0c3c000000-7f0c3e000000 rw-s 00000000 fe:01 1234 /dir/000001.vlog
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || filepath.Dir(fields[5]) != dir || !strings.HasSuffix(fields[1], "s") ||
			!slices.Contains(mapped, filepath.Ext(fields[5])) {
			continue
		}
		start, end, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		lo, err1 := strconv.ParseUint(start, 16, 64)
		hi, err2 := strconv.ParseUint(end, 16, 64)
		if err1 != nil || err2 != nil || hi <= lo {
			continue
		}
		// The map is Badger's, not a Go slice: madvise by address.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(lo), uintptr(hi-lo), unix.MADV_PAGEOUT); errno != 0 && errno != unix.ENOMEM {
			return errno // ENOMEM: unmapped meanwhile
		}
	}
	return sc.Err()
}
