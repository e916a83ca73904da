package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/fleet"
	"github.com/urfave/cli/v2"
)

// fleetFlag names the fleet's PostgreSQL: a libpq connection string or
// URL, whose role decides what a command may do there.
func fleetFlag(usage string) cli.Flag {
	return &cli.StringFlag{Name: "fleet", Usage: usage, EnvVars: []string{"TOOLGATE_FLEET"}}
}

// fleetConfigFile holds the daemon's fleet DSN when neither --fleet nor
// TOOLGATE_FLEET says it: $XDG_CONFIG_HOME/toolgate/fleet.dsn, one line.
func fleetConfigFile() string {
	return filepath.Join(configDir(), "fleet.dsn")
}

// daemonFleet is the daemon's fleet DSN: the flag (or TOOLGATE_FLEET), else
// the configuration file, else none (a single host).
func daemonFleet(cliCtx *cli.Context) (string, error) {
	if dsn := cliCtx.String("fleet"); dsn != "" {
		return dsn, nil
	}
	data, err := os.ReadFile(fleetConfigFile())
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the fleet configuration: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// fleetError turns the fleet's refusals into what a person reads and the
// exit code a script reads (the approvers' table).
func fleetError(err error) error {
	var r *fleet.RefusedError
	var un *fleet.UnavailableError
	switch {
	case errors.As(err, &un):
		return &gateUnavailable{fmt.Errorf("%w\nTry: check the --fleet DSN (host, role, password, sslmode) and that Postgres is up", err)}
	case errors.As(err, &r) && r.NotFound:
		return &dataError{fmt.Errorf("%s\nTry: toolgate pending --fleet DSN", r.Message)}
	case errors.As(err, &r) && r.Permission:
		return &permissionError{errors.New(r.Message)}
	case errors.As(err, &r) && (r.Expired || r.Decided):
		return &conflictError{errors.New(r.Message), r.Expired}
	}
	return err
}

func dialFleet(ctx context.Context, dsn string) (*fleet.Approver, error) {
	ap, err := fleet.Dial(ctx, dsn)
	if err != nil {
		return nil, fleetError(err)
	}
	return ap, nil
}

// fleetPending lists the fleet's pending asks.
func fleetPending(cliCtx *cli.Context, dsn string) error {
	ap, err := dialFleet(cliCtx.Context, dsn)
	if err != nil {
		return err
	}
	defer ap.Close()
	list, err := ap.Pending(cliCtx.Context)
	if err != nil {
		return fleetError(err)
	}
	if cliCtx.Bool("json") {
		return writeJSON(cliCtx.App.Writer, struct {
			SchemaVersion int         `json:"schema_version"`
			Approvals     []fleet.Ask `json:"approvals"`
		}{1, append([]fleet.Ask{}, list...)})
	}
	for _, a := range list {
		fmt.Fprintf(cliCtx.App.Writer, "[%s] ", a.Host)
		printApproval(cliCtx.App.Writer, a.ApprovalDetail)
	}
	return nil
}

// approverSource is what watch and notify follow and decide on: the fleet's
// queue with --fleet, else this machine's daemon's (started when none runs).
func approverSource(cliCtx *cli.Context) (client.Approver, func(), error) {
	if dsn := cliCtx.String("fleet"); dsn != "" {
		ap, err := dialFleet(cliCtx.Context, dsn)
		if err != nil {
			return nil, nil, err
		}
		return fleet.Source{Approver: ap}, ap.Close, nil
	}
	return followingClient(), func() {}, nil
}

// fleetDecide decides an ask through the fleet's arbiter.
func fleetDecide(ctx context.Context, dsn, id, decision, reason string) error {
	ap, err := dialFleet(ctx, dsn)
	if err != nil {
		return err
	}
	defer ap.Close()
	_, err = ap.Decide(ctx, id, decision == "approve", reason)
	return fleetError(err)
}

func fleetCommand() *cli.Command {
	return &cli.Command{
		Name:  "fleet",
		Usage: "set up the fleet's PostgreSQL: one approval queue and one audit for many hosts",
		Description: `A fleet is hosts whose daemons publish their audit to one PostgreSQL, where
Postgres arbitrates their approvals (docs/fleet.md). Configure a host's daemon
with toolgate serve --fleet DSN, TOOLGATE_FLEET, or a DSN in
$XDG_CONFIG_HOME/toolgate/fleet.dsn; approve from anywhere with
toolgate pending|approve|deny --fleet DSN or toolgate web --fleet DSN.

EXAMPLES
   toolgate fleet init --fleet "$ADMIN_DSN"
   toolgate fleet role ci-runner-3 --kind host --fleet "$ADMIN_DSN"

EXIT STATUS
   0    done
   64   bad command line
   69   Postgres could not be reached`,
		Subcommands: []*cli.Command{fleetInitCommand(), fleetRoleCommand()},
	}
}

func fleetInitCommand() *cli.Command {
	return &cli.Command{
		Name:  "init",
		Usage: "create the roles and apply the schema's migrations",
		Description: `Creates the group roles toolgate_agent (hosts), toolgate_approver (people) and
toolgate_auditor (read-only) when missing, and applies the embedded migrations
the database lacks. Run it as the database's owner; it is safe to run again.

EXAMPLES
   toolgate fleet init --fleet "postgres://admin@db.internal/toolgate?sslmode=verify-full"
   toolgate fleet init --fleet "$ADMIN_DSN" --json

EXIT STATUS
   0    the schema is current
   64   bad command line (no --fleet)
   69   Postgres could not be reached
   1    a migration failed (nothing of it was applied)`,
		Flags: []cli.Flag{fleetFlag("the database, as its owner (a libpq DSN or URL)"), jsonFlag()},
		Action: func(cliCtx *cli.Context) error {
			dsn := cliCtx.String("fleet")
			if dsn == "" {
				return usagef("fleet init needs --fleet DSN (or TOOLGATE_FLEET)")
			}
			res, err := fleet.Init(cliCtx.Context, dsn)
			if err != nil {
				return fleetError(err)
			}
			if cliCtx.Bool("json") {
				return writeJSON(cliCtx.App.Writer, struct {
					SchemaVersion int `json:"schema_version"`
					fleet.InitResult
				}{1, res})
			}
			fmt.Fprintf(cliCtx.App.Writer, "fleet schema at version %d (applied %v); roles created: %v\n", res.SchemaVersion, res.Applied, res.RolesCreated)
			return nil
		},
	}
}

func fleetRoleCommand() *cli.Command {
	return &cli.Command{
		Name:      "role",
		Usage:     "create a login role for a host, an approver or an auditor",
		ArgsUsage: "NAME",
		Description: `Creates a login role NAME in the group of its kind. A host's role name is its
name in the fleet (every row it writes carries it). The password is read from
standard input with --password-stdin, or generated and printed once.

EXAMPLES
   toolgate fleet role ci-runner-3 --kind host --fleet "$ADMIN_DSN"
   pass show toolgate/alice | toolgate fleet role alice --kind approver --password-stdin --fleet "$ADMIN_DSN"

EXIT STATUS
   0    created
   64   bad command line
   69   Postgres could not be reached
   1    Postgres refused (the role exists, or fleet init was not run)`,
		Flags: []cli.Flag{
			fleetFlag("the database, as its owner"),
			&cli.StringFlag{Name: "kind", Usage: "host, approver or auditor", Required: true},
			&cli.BoolFlag{Name: "password-stdin", Usage: "read the password from standard input"},
			jsonFlag(),
		},
		Action: func(cliCtx *cli.Context) error {
			name, err := oneID(cliCtx)
			if err != nil {
				return err
			}
			dsn := cliCtx.String("fleet")
			if dsn == "" {
				return usagef("fleet role needs --fleet DSN (or TOOLGATE_FLEET)")
			}
			password, generated := "", false
			if cliCtx.Bool("password-stdin") {
				line, err := bufio.NewReader(os.Stdin).ReadString('\n')
				if password = strings.TrimRight(line, "\r\n"); password == "" {
					return usagef("no password on standard input (%v)", err)
				}
			} else {
				b := make([]byte, 18)
				rand.Read(b)
				password, generated = hex.EncodeToString(b), true
			}
			if err := fleet.AddRole(cliCtx.Context, dsn, name, cliCtx.String("kind"), password); err != nil {
				return fleetError(err)
			}
			out := struct {
				SchemaVersion int    `json:"schema_version"`
				Role          string `json:"role"`
				Kind          string `json:"kind"`
				Password      string `json:"password,omitempty"`
			}{1, name, cliCtx.String("kind"), ""}
			if generated {
				out.Password = password
			}
			if cliCtx.Bool("json") {
				return writeJSON(cliCtx.App.Writer, out)
			}
			fmt.Fprintf(cliCtx.App.Writer, "created role %s (%s)\n", name, out.Kind)
			if generated {
				fmt.Fprintf(cliCtx.App.Writer, "password: %s\n", password)
			}
			return nil
		},
	}
}
