package api

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// openRegular opens a file of toolgate's (a spool file, the daemon
// record), which must be a regular file: its directory is the user's, so
// any process of theirs can put a FIFO there (whose open would block the
// hook until Claude Code's timeout lets the call through, and toolgate run
// and the daemon for ever) or a symbolic link to another file. It never
// blocks and never follows a link.
func openRegular(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return f, nil
}

// ReadRegular reads the regular file at path (through links), of at most
// max bytes, without waiting to open it, and refuses anything else before
// a read: what a gate reads on a tool call's way must not hold the call
// up until Claude Code's timeout for the hook, which lets it run. A FIFO
// would hold the open until a writer came, a device such as /dev/zero the
// read without end, and a write lease on the file (F_SETLEASE, which any
// process of the user's may take, the model's included) a blocking open
// for up to the kernel's lease-break-time, 45 s: opened O_NONBLOCK, it
// fails at once (EWOULDBLOCK).
func ReadRegular(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		err = fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return data, err
}
