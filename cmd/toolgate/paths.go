package main

import (
	"os"
	"path/filepath"
)

// Where toolgate keeps its state, following the XDG base directory
// specification. Each has a flag and an environment variable too.
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

// defaultLedgerDir is $XDG_STATE_HOME/toolgate (~/.local/state/toolgate).
func defaultLedgerDir() string {
	return filepath.Join(xdgDir("XDG_STATE_HOME", ".local/state"), "ledger")
}
