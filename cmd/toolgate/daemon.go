package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/internal/proc"
	"github.com/toolgate/toolgate/paths"
	"github.com/urfave/cli/v2"
)

func daemonCommand() *cli.Command {
	return &cli.Command{
		Name:  "daemon",
		Usage: "see, start and stop the gate daemon",
		Description: `The daemon serves the ledger: toolgate run starts one when none runs (it exits
after 5 idle minutes), toolgate serve runs one in the foreground (systemd). These
find the daemon that serves your ledger whatever environment started it: a cron
job's and your desktop's reach the same one.

EXAMPLES
   toolgate daemon status
   toolgate daemon status --json | jq .pending
   toolgate daemon stop
   toolgate daemon start

EXIT STATUS
   0    done (status: a daemon runs)
   64   bad command line
   69   status: no daemon runs; start: it could not start`,
		Subcommands: []*cli.Command{daemonStatusCommand(), daemonStartCommand(), daemonStopCommand()},
		Action:      helpOrUnknown,
	}
}

func daemonStatusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "say whether a daemon serves the ledger, and what it holds",
		Description: `Prints the daemon's pid and version, its ledger and sockets, when it started,
its active sessions and the asks waiting for a person. It starts no daemon.

EXAMPLES
   toolgate daemon status
   toolgate daemon status --json

EXIT STATUS
   0    a daemon runs
   64   bad command line
   69   no daemon runs (with --json, {"running": false} is printed too)`,
		Flags: []cli.Flag{jsonFlag()},
		Action: func(cliCtx *cli.Context) error {
			if cliCtx.Args().Present() {
				return usagef("daemon status takes no arguments")
			}
			return runDaemonStatus(cliCtx.Context, cliCtx.App.Writer, cliCtx.Bool("json"))
		},
	}
}

// daemonStatusJSON is daemon status --json.
type daemonStatusJSON struct {
	SchemaVersion int    `json:"schema_version"`
	Running       bool   `json:"running"`
	Ledger        string `json:"ledger"`
	Log           string `json:"log"`
	// LastStop, when no daemon runs, is why the last one stopped on its
	// own, if it left a note.
	LastStop *paths.StopNote `json:"last_stop,omitempty"`
	*api.StatusResponse
}

func runDaemonStatus(ctx context.Context, w io.Writer, asJSON bool) error {
	p := livePaths()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	st, err := client.NewClient(p.Socket()).Status(ctx)
	out := daemonStatusJSON{SchemaVersion: 1, Running: err == nil, Ledger: p.LedgerDir(), Log: p.LogFile()}
	if err == nil {
		out.StatusResponse, out.Ledger = &st, st.Ledger
	} else if note, ok := paths.ReadStopNote(p); ok {
		out.LastStop = &note
	}
	if asJSON {
		if werr := writeJSON(w, out); werr != nil {
			return werr
		}
		if err != nil {
			return &exitStatus{exitUnavailable}
		}
		return nil
	}
	if err != nil {
		last := ""
		if note, ok := paths.ReadStopNote(p); ok {
			last = fmt.Sprintf("\nThe last daemon (pid %d) stopped at %s: %s", note.PID, note.At.Local().Format(time.DateTime), note.Reason)
		}
		return &gateUnavailable{fmt.Errorf("no toolgate daemon serves the ledger %s (nothing answers on %s)%s\n"+
			"Try: toolgate daemon start (toolgate run starts one itself)", p.LedgerDir(), p.Socket(), last)}
	}
	if st.Broken != "" {
		fmt.Fprintf(w, "stopping  %s\n", st.Broken)
	}
	fmt.Fprintf(w, "running   pid %d, toolgate %s, protocol %d\n", st.PID, st.Version, st.Protocol)
	fmt.Fprintf(w, "ledger    %s\n", st.Ledger)
	fmt.Fprintf(w, "sockets   %s\n", p.RuntimeDir)
	if !st.StartedAt.IsZero() {
		fmt.Fprintf(w, "started   %s (%s ago)\n", st.StartedAt.Local().Format(time.DateTime), time.Since(st.StartedAt).Round(time.Second))
	}
	fmt.Fprintf(w, "sessions  %d active, %d %s waiting for a person\n", st.Sessions, st.Pending, pick(st.Pending, "ask", "asks"))
	fmt.Fprintf(w, "log       %s\n", p.LogFile())
	return nil
}

// pick is one when n is 1, else many.
func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func daemonStartCommand() *cli.Command {
	return &cli.Command{
		Name:  "start",
		Usage: "start a detached daemon when none runs",
		Description: `The same as toolgate serve --background: starts a daemon detached from the
terminal when none serves the ledger, and returns once it is ready. It exits
after 5 idle minutes. Quiet on success.

EXAMPLES
   toolgate daemon start

EXIT STATUS
   0    a daemon is ready
   64   bad command line
   69   it could not start (the message says why; see also toolgate doctor)`,
		Action: func(cliCtx *cli.Context) error {
			if cliCtx.Args().Present() {
				return usagef("daemon start takes no arguments")
			}
			_, err := startDetached(cliCtx.Context, "")
			return err
		},
	}
}

func daemonStopCommand() *cli.Command {
	return &cli.Command{
		Name:  "stop",
		Usage: "stop the daemon; asks that wait stay pending in the ledger",
		Description: `Sends the daemon SIGTERM and waits until it is gone. Asks that wait for a person
stay pending in the ledger; a toolgate run that waits on one starts a daemon
again and goes on waiting for the same approval. Quiet on success.

EXAMPLES
   toolgate daemon stop
   toolgate daemon stop --timeout 30s

EXIT STATUS
   0    stopped, or none was running
   1    it did not stop within --timeout
   64   bad command line`,
		Flags: []cli.Flag{&cli.DurationFlag{Name: "timeout", Value: 15 * time.Second, Usage: "how long to wait for it to stop (e.g. 30s)"}},
		Action: func(cliCtx *cli.Context) error {
			if cliCtx.Args().Present() {
				return usagef("daemon stop takes no arguments")
			}
			return runDaemonStop(cliCtx.Context, cliCtx.App.ErrWriter, cliCtx.Duration("timeout"))
		},
	}
}

// runDaemonStop stops the daemon that answers on the ledger's socket. The
// pid comes from the kernel (the socket's peer), not from what the
// daemon says of itself.
func runDaemonStop(ctx context.Context, stderr io.Writer, timeout time.Duration) error {
	c := client.NewClient(livePaths().Socket())
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	peer, err := c.Peer(sctx)
	if err != nil {
		return nil // none runs: nothing to stop
	}
	st, err := c.Status(sctx)
	if err != nil || st.PID != peer.PID {
		return fmt.Errorf("the process on %s (pid %d) does not answer as a toolgate daemon: not stopping it\nTry: toolgate doctor", c.SocketPath, peer.PID)
	}
	if st.Sessions > 0 {
		fmt.Fprintf(stderr, "toolgate: %d %s active: %s toolgate run starts a daemon again\n", st.Sessions,
			pick(st.Sessions, "session is", "sessions are"), pick(st.Sessions, "its", "their"))
	}
	if err := syscall.Kill(peer.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop the daemon (pid %d): %w", peer.PID, err)
	}
	deadline := time.Now().Add(timeout)
	for said := false; proc.Alive(peer.PID); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the daemon (pid %d) did not stop within %s\nTry: kill -KILL %d (its asks stay pending in the ledger)", peer.PID, timeout, peer.PID)
		}
		if !said && time.Until(deadline) < timeout-time.Second {
			said = true
			fmt.Fprintf(stderr, "toolgate: waiting for the daemon (pid %d) to stop…\n", peer.PID)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}
