package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/paths"
	"golang.org/x/sys/unix"
)

// A daemon serves only while what it cannot serve without is there: its
// ledger's directory, the same one it opened and writable, on a filesystem
// with room, and its runtime directory (its sockets, its lock). A user may
// remove a checkout or a temporary directory that held them, remount a
// disk read-only, fill it: Badger then retries its writes for ever, and a
// daemon that waited on it would outlive everything it served. So the
// daemon looks every healthInterval, and once one of them is lost it
// stops taking calls (each caller denies gate_unavailable), logs why,
// leaves a stop note (paths.StopNote) for toolgate run and daemon status,
// and exits within stopBound of the loss.

// healthInterval is how often the daemon looks at its ledger's directory
// and its runtime directory.
const healthInterval = time.Second

// DiskFullGrace is how long the ledger's filesystem may stay full (calls
// are denied gate_unavailable meanwhile) before the daemon stops: a disk
// that fills for a moment does not end every session.
const DiskFullGrace = 15 * time.Second

// closeDeadline bounds the ledger's Close when the daemon exits: Badger's
// Close retries a flush into a directory that is gone for ever.
const closeDeadline = 5 * time.Second

// StopBound is how long after the loss of its ledger's directory or its
// runtime directory the daemon has exited at most: the look
// (healthInterval), the shutdown of requests in flight (shutdownGrace)
// and the ledger's Close (closeDeadline), with room.
const StopBound = healthInterval + shutdownGrace + closeDeadline + 4*time.Second

// fileID names a directory whatever its path: a directory removed and made
// again at the same path is another one.
type fileID struct{ dev, ino uint64 }

func statID(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}, err
	}
	return fileID{uint64(st.Dev), st.Ino}, nil
}

// vitals is what the daemon checks, as it was when it started serving.
type vitals struct {
	ledgerDir, runtimeDir string
	ledger, runtime       fileID
	minFree               int64
	fullSince             time.Time // zero while there is room
}

func newVitals(p paths.Paths) (*vitals, error) {
	v := &vitals{ledgerDir: p.LedgerDir(), runtimeDir: p.RuntimeDir, minFree: ledger.DefaultMinFree}
	var err error
	if v.ledger, err = statID(v.ledgerDir); err != nil {
		return nil, fmt.Errorf("the ledger's directory: %w", err)
	}
	if v.runtime, err = statID(v.runtimeDir); err != nil {
		return nil, fmt.Errorf("the runtime directory: %w", err)
	}
	return v, nil
}

// check returns why the daemon can no longer serve, or nil.
func (v *vitals) check(now time.Time) error {
	if err := sameDir("the ledger's directory", v.ledgerDir, v.ledger); err != nil {
		return err
	}
	if err := sameDir("the runtime directory", v.runtimeDir, v.runtime); err != nil {
		return err
	}
	// access(2) says EROFS for a read-only filesystem, whoever asks (root
	// included), and EACCES for a directory the user may no longer write.
	if err := unix.Access(v.ledgerDir, unix.W_OK); err != nil {
		return fmt.Errorf("the ledger's directory %s can no longer be written: %w", v.ledgerDir, err)
	}
	var st unix.Statfs_t
	if unix.Statfs(v.ledgerDir, &st) == nil && int64(st.Bavail)*int64(st.Bsize) < v.minFree {
		if v.fullSince.IsZero() {
			v.fullSince = now
		}
		if full := now.Sub(v.fullSince); full >= DiskFullGrace {
			return fmt.Errorf("the ledger's filesystem (%s) has been full for %v: less than %d MB free", v.ledgerDir, full.Round(time.Second), v.minFree>>20)
		}
		return nil
	}
	v.fullSince = time.Time{}
	return nil
}

func sameDir(what, path string, was fileID) error {
	now, err := statID(path)
	switch {
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("%s %s was removed", what, path)
	case err != nil:
		return fmt.Errorf("%s %s cannot be looked at: %w", what, path, err)
	case now != was:
		return fmt.Errorf("%s %s was replaced by another directory", what, path)
	}
	return nil
}

// watchHealth looks at the daemon's vitals until ctx ends; when one is
// lost it records why (status, log, stop note) and calls stop.
func (d *Daemon) watchHealth(ctx context.Context, v *vitals, stop context.CancelFunc) {
	tick := time.NewTicker(healthInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := v.check(time.Now())
		if err == nil {
			continue
		}
		d.broken.Store(err.Error())
		d.log.Error("the daemon can no longer serve: stopping; every call is denied gate_unavailable until a daemon runs again", "why", err)
		note := paths.StopNote{PID: os.Getpid(), Ledger: v.ledgerDir, Reason: err.Error(), At: time.Now().UTC()}
		if paths.WriteStopNote(d.cfg.Paths, note) == 0 {
			d.log.Warn("no stop note could be written: toolgate run and daemon status will not know why the daemon stopped")
		}
		stop()
		return
	}
}

// closeLedger closes the ledger within closeDeadline, and says in the log
// what is durable when Close does not return in time.
func closeLedger(l *ledger.Ledger, dir string, log *slog.Logger) {
	done := make(chan error, 1)
	go func() { done <- l.Close() }()
	select {
	case err := <-done:
		if err != nil {
			log.Error("close the ledger", "err", err)
		}
	case <-time.After(closeDeadline):
		what := "every call it acknowledged is in its journal, which the next daemon applies when it opens the ledger"
		if _, err := os.Stat(dir); err != nil {
			what = "its directory is gone, and with it what it held"
		}
		log.Error(fmt.Sprintf("the ledger did not close within %v: exiting without it; %s", closeDeadline, what), "ledger", dir)
	}
}
