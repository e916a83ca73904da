package supervisor

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A cached listing that is a FIFO (the cache is beside the ledger, which
// the model's code can write under Landlock) is no listing, at once: run's
// start does not wait on it.
func TestCachedListingThatIsAFIFO(t *testing.T) {
	d := Discovery{CacheDir: t.TempDir(), CacheTTL: time.Hour}
	if err := syscall.Mkfifo(filepath.Join(d.CacheDir, "k.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan bool, 1)
	go func() { _, ok := d.cached("k"); got <- ok }()
	select {
	case ok := <-got:
		if ok {
			t.Error("a FIFO read as a cached listing")
		}
	case <-time.After(10 * time.Second): // a bound on a hang, not a wait for an event
		t.Fatal("the cache lookup still waits on the FIFO after 10s")
	}
}
