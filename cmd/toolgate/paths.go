package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/paths"
)

// Where toolgate keeps its state, following the XDG base directory
// specification (see paths.From). Each has a flag or an environment
// variable too.
const ledgerEnv = "TOOLGATE_LEDGER"

// envPaths are the paths this process's environment names; ledger, when
// set, names the ledger directory. The daemon serves these.
func envPaths(ledger string) paths.Paths {
	p := paths.From(os.Getenv)
	if ledger != "" {
		p.Ledger = ledger
	}
	return p
}

// livePaths are those of the daemon that serves the user's ledger, found
// by its record whatever runtime directory it was started with; the
// environment's when none runs. Clients use these.
func livePaths() paths.Paths { return envPaths("").Live() }

// defaultLedgerDir is $XDG_STATE_HOME/toolgate/ledger.
func defaultLedgerDir() string { return envPaths("").LedgerDir() }

// configDir is $XDG_CONFIG_HOME/toolgate.
func configDir() string { return paths.ConfigDir(os.Getenv) }

// defaultPolicy is $XDG_CONFIG_HOME/toolgate/policy.json.
func defaultPolicy() string { return filepath.Join(configDir(), "policy.json") }

// ensureDaemon starts the daemon when none runs, for the commands that
// need one whatever happens (toolgate run, audit), and returns the paths
// of the one that serves.
func ensureDaemon(ctx context.Context) (paths.Paths, error) { return startDetached(ctx, "") }

// startDetached starts a daemon on the ledger when none answers, detached,
// exiting after 5 idle minutes.
func startDetached(ctx context.Context, ledger string) (paths.Paths, error) {
	self, err := os.Executable()
	if err != nil {
		return paths.Paths{}, err
	}
	_, p, err := client.Ensure(ctx, client.StartConfig{Paths: envPaths(ledger), Self: self, IdleExit: 5 * time.Minute})
	if err != nil {
		return p, &gateUnavailable{fmt.Errorf("%w\nTry: toolgate doctor", err)}
	}
	return p, nil
}
