package paths

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// OpenRegular opens the file at path with flag, and refuses it unless it
// is a regular file, before a read or a write. It never waits to open:
// what a gate reads or writes on a tool call's way must not hold the call
// up until Claude Code's timeout for the hook, which lets it run. A FIFO
// would hold the open until a writer (or reader) came, and a write lease
// on the file (F_SETLEASE, which any process of the user's may take, the
// model's included) a blocking open for up to the kernel's
// lease-break-time, 45 s: opened O_NONBLOCK, it fails at once
// (EWOULDBLOCK). It returns the file's information too. Files of
// toolgate's own (spool files, the daemon record) are opened O_NOFOLLOW:
// their directory is the user's, so any process of theirs can put a
// symbolic link to another file there.
func OpenRegular(path string, flag int) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", path)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

// ReadRegular reads the regular file at path (through links), of at most
// max bytes, without waiting to open it (OpenRegular): a device such as
// /dev/zero, which would be read without end, is refused too.
func ReadRegular(path string, max int64) ([]byte, error) {
	f, _, err := OpenRegular(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		err = fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return data, err
}
