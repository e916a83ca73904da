package api

import (
	"os"
	"path/filepath"
	"strconv"
)

// RuntimeDir is where the daemon's sockets live: TOOLGATE_RUNTIME_DIR, or
// $XDG_RUNTIME_DIR/toolgate, or a private directory under the system's
// temporary directory when XDG_RUNTIME_DIR is unset. getenv is how the
// caller reads its environment; the CLI and the hook binary both decide
// the path here, so that they always meet.
func RuntimeDir(getenv func(string) string) string {
	if dir := getenv("TOOLGATE_RUNTIME_DIR"); filepath.IsAbs(dir) {
		return dir
	}
	if dir := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "toolgate")
	}
	return filepath.Join(os.TempDir(), "toolgate-"+strconv.Itoa(os.Getuid()))
}

// SocketName is the gate socket's name in the runtime directory.
const SocketName = "gate.sock"
