package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/toolgate/toolgate/web"
	"github.com/urfave/cli/v2"
)

func webCommand() *cli.Command {
	return &cli.Command{
		Name:  "web",
		Usage: "approve from a browser: a page with the pending asks, live",
		Description: `Serves a small page on loopback: every pending ask in full (a command as the
command, an edit as a diff, control characters visible), Approve and Deny with
a reason for the audit, live updates, and the recent decisions. It serves this
machine's daemon's queue, or with --fleet every host's, from the fleet's
PostgreSQL (an approver's role: the decision records it and your address).

It prints the page's address and a one-time code: type the code in the page's
sign-in form (it is never part of a link, so no browser's command line or
history shows it to another process); it works once. toolgate has no login
system of its own: to reach the page from elsewhere, use an SSH tunnel
(ssh -L 8421:127.0.0.1:8421 host) or a reverse proxy, and name the origin the
browser sees with --origin. --webhook posts each new ask as JSON with a
Slack-compatible "text" field.

EXAMPLES
   toolgate web
   toolgate web --fleet "postgres://alice@db.internal/toolgate?sslmode=verify-full" --listen 127.0.0.1:8421
   toolgate web --fleet "$DSN" --origin https://toolgate.example.com --webhook https://hooks.slack.com/services/...

EXIT STATUS
   0    stopped by SIGINT or SIGTERM
   64   bad command line (a --listen address that is not loopback)
   69   the daemon, or the fleet's Postgres, could not be reached`,
		Flags: []cli.Flag{
			fleetFlag("serve the fleet's queue from its PostgreSQL (a DSN with an approver's role)"),
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8421", Usage: "loopback address and port (port 0: any free one)", EnvVars: []string{"TOOLGATE_WEB_LISTEN"}},
			&cli.StringSliceFlag{Name: "origin", Usage: "another origin the page is reached as (a reverse proxy's https://host)"},
			&cli.StringFlag{Name: "webhook", Usage: "POST each new ask as JSON to this URL", EnvVars: []string{"TOOLGATE_WEBHOOK"}},
			&cli.BoolFlag{Name: "json", Usage: "print the address and the code as one JSON line ({\"schema_version\": 2, \"url\", \"code\"})"},
		},
		Action: func(cliCtx *cli.Context) error {
			return runWeb(cliCtx)
		},
	}
}

func runWeb(cliCtx *cli.Context) error {
	ctx := cliCtx.Context
	addr, err := net.ResolveTCPAddr("tcp", cliCtx.String("listen"))
	if err != nil || addr.IP == nil || !addr.IP.IsLoopback() {
		return usagef("--listen must be a loopback address such as 127.0.0.1:8421 (remote access: an SSH tunnel or a reverse proxy)")
	}
	var queue web.Queue
	if dsn := cliCtx.String("fleet"); dsn != "" {
		ap, err := dialFleet(ctx, dsn)
		if err != nil {
			return err
		}
		defer ap.Close()
		queue = web.FleetQueue{Approver: ap}
	} else {
		queue = &web.LocalQueue{Client: approverClient()}
	}
	ln, err := net.ListenTCP("tcp", addr)
	if err != nil {
		return &gateUnavailable{fmt.Errorf("listen on %s: %w", addr, err)}
	}
	origins := append([]string{"http://" + ln.Addr().String()}, cliCtx.StringSlice("origin")...)
	srv, err := web.New(web.Config{Queue: queue, Origins: origins, Webhook: cliCtx.String("webhook"),
		Log: slog.New(slog.NewTextHandler(cliCtx.App.ErrWriter, nil))})
	if err != nil {
		ln.Close()
		return usagef("%v", err)
	}
	if cliCtx.Bool("json") {
		writeJSONLine(cliCtx, struct {
			SchemaVersion int    `json:"schema_version"`
			URL           string `json:"url"`
			Code          string `json:"code"`
		}{2, srv.URL(), srv.Code()})
	} else {
		fmt.Fprintf(cliCtx.App.Writer, "toolgate web: open %s and sign in with the code %s\n(the code works once; stop with Ctrl-C)\n", srv.URL(), srv.Code())
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go srv.Run(runCtx)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		shutdown, stop := context.WithTimeout(context.Background(), 2*time.Second)
		defer stop()
		hs.Shutdown(shutdown)
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// writeJSONLine prints v as one line of JSON, for a script that reads
// lines as they come.
func writeJSONLine(cliCtx *cli.Context, v any) {
	data, _ := json.Marshal(v)
	fmt.Fprintf(cliCtx.App.Writer, "%s\n", data)
}
