// Package dbustest starts a real D-Bus session bus (dbus-daemon --session)
// for a test: toolgate notify and doctor are tested against one, never
// against a fake bus. Only tests import it.
package dbustest

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// SessionBus starts a session bus for the length of the test and returns
// its address. Without dbus-daemon the test fails, saying what to install.
func SessionBus(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		t.Fatal("dbus-daemon is needed (Debian: apt-get install dbus)")
	}
	sock := filepath.Join(t.TempDir(), "bus")
	cmd := exec.Command("dbus-daemon", "--session", "--nofork", "--print-address", "--address", "unix:path="+sock)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon: %v", err)
	}
	return strings.TrimSpace(addr)
}
