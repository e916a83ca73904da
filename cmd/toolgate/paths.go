package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/daemon"
)

// Where toolgate keeps its state, following the XDG base directory
// specification. Each has a flag or an environment variable too.
const (
	ledgerEnv = "TOOLGATE_LEDGER"
	appName   = "toolgate"
)

// xdgDir returns $env/toolgate, or ~/fallback/toolgate when env is unset
// or not absolute (as the specification asks).
func xdgDir(env, fallback string) string {
	if dir := os.Getenv(env); filepath.IsAbs(dir) {
		return filepath.Join(dir, appName)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, fallback, appName)
}

// runtimeDir is where the sockets live (see api.RuntimeDir).
func runtimeDir() string { return api.RuntimeDir(os.Getenv) }

// stateDir is TOOLGATE_STATE_DIR, or $XDG_STATE_HOME/toolgate.
func stateDir() string {
	if dir := os.Getenv("TOOLGATE_STATE_DIR"); filepath.IsAbs(dir) {
		return dir
	}
	return xdgDir("XDG_STATE_HOME", ".local/state")
}

// gatePaths are the daemon's paths; ledger overrides the ledger directory.
func gatePaths(ledger string) api.Paths {
	return api.Paths{RuntimeDir: runtimeDir(), StateDir: stateDir(), Ledger: ledger}
}

// defaultLedgerDir is $XDG_STATE_HOME/toolgate/ledger.
func defaultLedgerDir() string { return gatePaths("").LedgerDir() }

// defaultPolicy is $XDG_CONFIG_HOME/toolgate/policy.json.
func defaultPolicy() string {
	return filepath.Join(xdgDir("XDG_CONFIG_HOME", ".config"), "policy.json")
}

// ensureDaemon starts the daemon when none runs, for the commands that
// talk to it (toolgate run, audit, pending, show, approve, deny).
func ensureDaemon(ctx context.Context) error { return startDetached(ctx, os.Getenv(ledgerEnv)) }

// startDetached starts a daemon on the ledger when none answers, detached,
// exiting after 5 idle minutes.
func startDetached(ctx context.Context, ledger string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	_, err = daemon.Ensure(ctx, daemon.StartConfig{Paths: gatePaths(ledger), Self: self, IdleExit: 5 * time.Minute})
	if err != nil {
		return &gateUnavailable{fmt.Errorf("%w\nTry: toolgate doctor", err)}
	}
	return nil
}
