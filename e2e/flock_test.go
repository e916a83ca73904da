package e2e

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func flock(t *testing.T, f *os.File) {
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
}
