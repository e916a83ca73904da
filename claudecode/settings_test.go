package claudecode

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A settings layer that is a FIFO (the model's code can leave one) is
// not waited on as run starts: it counts as a layer that may turn the
// sandbox on.
func TestSandboxEnabledDoesNotWaitOnAFIFO(t *testing.T) {
	cwd := t.TempDir()
	if err := os.Mkdir(filepath.Join(cwd, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	layer := filepath.Join(cwd, ".claude", "settings.local.json")
	if err := syscall.Mkfifo(layer, 0o600); err != nil {
		t.Fatal(err)
	}
	type result struct {
		on    bool
		layer string
	}
	got := make(chan result, 1)
	go func() { on, f := SandboxEnabled(nil, cwd, ""); got <- result{on, f} }()
	select {
	case r := <-got:
		if !r.on || r.layer != layer {
			t.Errorf("SandboxEnabled = %v, %q; want true, %q", r.on, r.layer, layer)
		}
	case <-time.After(10 * time.Second): // a bound on a hang, not a wait for an event
		t.Fatal("SandboxEnabled still waits on the FIFO after 10s")
	}
}
