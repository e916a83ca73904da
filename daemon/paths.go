package daemon

import (
	"fmt"
	"os"

	"github.com/toolgate/toolgate/api"
)

// makeRuntimeDir creates the runtime directory 0700 and checks that it is
// ours: a socket in a directory another user controls is not safe.
func makeRuntimeDir(p api.Paths) error {
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

// stateDir creates the state directory 0700.
func stateDir(p api.Paths) error {
	if err := os.MkdirAll(p.StateDir, 0o700); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	return nil
}
