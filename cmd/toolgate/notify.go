package main

import (
	"fmt"

	"github.com/godbus/dbus/v5"
	"github.com/toolgate/toolgate/notify"
	"github.com/urfave/cli/v2"
)

func notifyCommand() *cli.Command {
	return &cli.Command{
		Name:  "notify",
		Usage: "show each ask as a desktop notification with Approve and Deny",
		Description: `Runs until stopped: every pending ask becomes a notification (freedesktop
notifications, over the D-Bus session bus) with Approve and Deny actions bound
to that ask's approval id; a notification is withdrawn when its ask is decided
elsewhere or expires, and a click on one that is no longer pending decides
nothing. Without an actions-capable notification server, the notification says
how to approve instead. examples/systemd has a user unit for it.

EXAMPLES
   toolgate notify
   systemctl --user enable --now toolgate-notify
   toolgate notify --fleet "postgres://alice@db.internal/toolgate?sslmode=verify-full"

It starts no daemon: it waits for one, and follows it when it starts again.

EXIT STATUS
   0    stopped
   64   bad command line
   69   no session bus or notification service`,
		Flags: []cli.Flag{fleetFlag("notify of every host's asks, from the fleet's PostgreSQL (a DSN with an approver's role)")},
		Action: func(cliCtx *cli.Context) error {
			bus, err := dbus.ConnectSessionBus()
			if err != nil {
				return &gateUnavailable{fmt.Errorf("no D-Bus session bus: %w\nTry: run it in your desktop session, or approve with toolgate watch", err)}
			}
			defer bus.Close()
			source, done, err := approverSource(cliCtx)
			if err != nil {
				return err
			}
			defer done()
			n := &notify.Notifier{Bus: bus, Approver: source, Log: cliCtx.App.ErrWriter}
			if err := n.Run(cliCtx.Context); err != nil {
				return &gateUnavailable{err}
			}
			return nil
		},
	}
}
