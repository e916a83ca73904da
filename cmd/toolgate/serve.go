package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/toolgate/toolgate/daemon"
	"github.com/urfave/cli/v2"
)

// daemonMemoryLimit is the daemon's soft limit on Go's memory: without
// it, the heap of a busy daemon grows to twice what it holds (GOGC), 76 MB
// of anonymous memory after 100,000 calls instead of 27-35 MB (32-42 MB
// under 48 MiB, whose calls took 5% less time); below it the collector
// runs too often (32 MiB: 60% slower). What Badger holds, with its
// memtables, is about 28 MB of that.
const daemonMemoryLimit = 44 << 20

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run the gate daemon in the foreground",
		Description: `The daemon is the only process that opens the ledger. It listens on
$XDG_RUNTIME_DIR/toolgate/gate.sock (0600, in a 0700 directory) for the hook,
the prompt tool, toolgate run and the CLI, and refuses other users. Run it
under systemd (examples/systemd) or let toolgate run start it on demand: a
daemon started that way exits after --idle-exit with no session.

The daemon keeps its Go heap under a soft limit of 44 MiB (GOMEMLIMIT
overrides it): after 100,000 calls it holds about 50-60 MB.

With --background it starts a daemon detached from the terminal when none
answers, waits until it is ready, and returns (toolgate install's hook does
this on its first call); a daemon started so exits after 5 idle minutes.

EXAMPLES
   toolgate serve
   toolgate serve --ledger /var/tmp/toolgate-ledger --idle-exit 10m
   toolgate serve --background
   toolgate serve --fleet "postgres://ci-runner-3@db.internal/toolgate?sslmode=verify-full"

With a fleet DSN (--fleet, TOOLGATE_FLEET, or $XDG_CONFIG_HOME/toolgate/fleet.dsn)
the daemon publishes its audit chain to PostgreSQL, and Postgres arbitrates its
approvals (docs/fleet.md); without one nothing changes.

EXIT STATUS
   0    stopped by SIGTERM or SIGINT, or idle; with --background: a daemon is ready
   64   bad command line
   69   the ledger or the socket is unavailable, or a daemon already runs`,
		Flags: []cli.Flag{
			ledgerFlag(),
			&cli.DurationFlag{Name: "idle-exit", Usage: "exit after this long with no session and no request (0: never)", EnvVars: []string{"TOOLGATE_IDLE_EXIT"}},
			&cli.IntFlag{Name: "ready-fd", Hidden: true, Usage: "write \"ready\" to this file descriptor once listening"},
			&cli.BoolFlag{Name: "background", Usage: "start a detached daemon when none answers, and return once it is ready"},
			fleetFlag("publish to the fleet's PostgreSQL, which arbitrates approvals (a DSN with a host's role; default: $XDG_CONFIG_HOME/toolgate/fleet.dsn)"),
		},
		Action: func(cliCtx *cli.Context) error {
			if cliCtx.Bool("background") {
				_, err := startDetached(cliCtx.Context, cliCtx.String("ledger"))
				return err
			}
			var err error
			if os.Getenv("GOMEMLIMIT") == "" {
				debug.SetMemoryLimit(daemonMemoryLimit)
			}
			cfg := daemon.Config{
				Paths:     envPaths(cliCtx.String("ledger")),
				Logger:    slog.New(slog.NewTextHandler(cliCtx.App.ErrWriter, nil)),
				Version:   version,
				IdleExit:  cliCtx.Duration("idle-exit"),
				ConfigDir: configDir(),
			}
			if cfg.Fleet, err = daemonFleet(cliCtx); err != nil {
				return &gateUnavailable{err}
			}
			if fd := cliCtx.Int("ready-fd"); fd > 0 {
				ready := os.NewFile(uintptr(fd), "ready")
				defer ready.Close()
				cfg.Ready = ready
			}
			err = daemon.Serve(cliCtx.Context, cfg)
			if errors.Is(err, daemon.ErrRunning) {
				return &gateUnavailable{fmt.Errorf("%w\nTry: toolgate audit, or stop the running daemon first", err)}
			}
			if err != nil {
				return &gateUnavailable{err}
			}
			return nil
		},
	}
}
