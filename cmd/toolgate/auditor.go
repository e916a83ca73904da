package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/paths"
)

// withAuditor calls fn with a client of the approvers' socket of the
// daemon that serves the ledger in ledgerDir: the user's daemon (started
// when none runs) when ledgerDir is "" or the one it serves; otherwise a
// private daemon started for that ledger in a private runtime directory,
// and stopped once fn returns. Only a daemon opens a ledger.
func withAuditor(ctx context.Context, ledgerDir string, fn func(*client.Client) error) error {
	if ledgerDir == "" {
		paths, err := ensureDaemon(ctx)
		if err != nil {
			return err
		}
		return auditorError(fn(personClient(paths.ApproveSocket())))
	}
	dir, err := filepath.Abs(ledgerDir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("no ledger at %s: %w\nTry: --ledger DIR or %s", dir, err, ledgerEnv)
	}
	// The daemon that serves it, wherever it was started, or the user's.
	for _, paths := range []paths.Paths{envPaths(dir).Live(), livePaths()} {
		if st, err := personClient(paths.Socket()).Status(ctx); err == nil && st.Ledger == dir {
			return auditorError(fn(personClient(paths.ApproveSocket())))
		}
	}
	runtime, err := os.MkdirTemp("", "tga")
	if err != nil {
		return err
	}
	defer os.RemoveAll(runtime)
	private := paths.Paths{RuntimeDir: filepath.Join(runtime, "toolgate"), StateDir: runtime, Ledger: dir}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	client, _, err := client.Ensure(ctx, client.StartConfig{Paths: private, Self: self, IdleExit: time.Minute})
	if err != nil {
		return &gateUnavailable{fmt.Errorf("open the ledger %s: %w\nTry: toolgate audit verify (or export) "+
			"with the XDG_RUNTIME_DIR of the daemon that holds it", dir, err)}
	}
	defer stopDaemon(client, private)
	return auditorError(fn(personClient(private.ApproveSocket())))
}

// stopDaemon ends a daemon this process started, and waits until it has
// closed its ledger.
func stopDaemon(c *client.Client, p paths.Paths) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
		return
	}
	syscall.Kill(st.PID, syscall.SIGTERM)
	for deadline := time.Now().Add(10 * time.Second); client.Alive(p) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

// auditorError turns the daemon's failures into what a person reads.
func auditorError(err error) error {
	if client.IsUnavailable(err) {
		return &gateUnavailable{fmt.Errorf("%w\nTry: toolgate doctor", err)}
	}
	var se *client.StatusError
	switch {
	case errors.As(err, &se) && se.Err.Code == "self_approval":
		return &permissionError{fmt.Errorf("refused: %s", se.Err.Message)}
	case errors.As(err, &se) && se.Err.Code == "fleet_unavailable":
		return &gateUnavailable{fmt.Errorf("%s\nTry: again once PostgreSQL answers (toolgate doctor)", se.Err.Message)}
	case errors.As(err, &se):
		return fmt.Errorf("the daemon could not read the audit: %s", se.Err.Message)
	}
	return err
}
