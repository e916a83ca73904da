package paths

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// MakeRuntimeDir creates the runtime directory 0700 and checks that it is
// ours: a socket in a directory another user controls is not safe.
func (p Paths) MakeRuntimeDir() error {
	if err := os.MkdirAll(p.SpoolDir(), 0o700); err != nil {
		return fmt.Errorf("runtime directory: %w", err)
	}
	info, err := os.Lstat(p.RuntimeDir)
	if err != nil {
		return fmt.Errorf("runtime directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("runtime directory %s is not a directory", p.RuntimeDir)
	}
	if uid, ok := ownerUID(info); ok && uid != os.Getuid() {
		return fmt.Errorf("runtime directory %s belongs to uid %d, not to you", p.RuntimeDir, uid)
	}
	if info.Mode().Perm() != 0o700 {
		if err := os.Chmod(p.RuntimeDir, 0o700); err != nil {
			return fmt.Errorf("runtime directory: %w", err)
		}
	}
	if len(p.Socket()) >= 108 {
		return fmt.Errorf("socket path %s is longer than the 107 bytes Unix sockets allow; set XDG_RUNTIME_DIR to a shorter directory", p.Socket())
	}
	return nil
}

// MakeStateDir creates the state directory 0700.
func (p Paths) MakeStateDir() error {
	if err := os.MkdirAll(p.StateDir, 0o700); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	return nil
}

func ownerUID(info fs.FileInfo) (int, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// Lock takes an exclusive flock on path, waiting when wait is set. The
// lock lives as long as the returned file is open (or the process).
func Lock(path string, wait bool) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	how := unix.LOCK_EX
	if !wait {
		how |= unix.LOCK_NB
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
