package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/toolgate/toolgate/render"
	"github.com/toolgate/toolgate/supervisor/api"
	"github.com/urfave/cli/v2"
)

// approverClient is the client of the approvers' socket, with a daemon
// started when none runs (pending approvals live in the ledger; a daemon
// re-arms them).
func approverClient(ctx context.Context) (*api.Client, error) {
	if err := ensureDaemon(ctx); err != nil {
		return nil, err
	}
	return api.NewClient(gatePaths("").ApproveSocket()), nil
}

// approverError turns the daemon's refusals into what a person reads and
// the exit code a script reads.
func approverError(err error) error {
	var se *api.StatusError
	switch {
	case api.IsUnavailable(err):
		return &gateUnavailable{fmt.Errorf("%w\nTry: toolgate serve, or check that toolgate run is running", err)}
	case errors.As(err, &se) && se.Err.Code == "not_found":
		return &dataError{fmt.Errorf("no such approval\nTry: toolgate pending")}
	case errors.As(err, &se) && se.Err.Code == "self_approval":
		return &permissionError{errors.New(se.Err.Message)}
	case errors.As(err, &se) && (se.Err.Code == "expired" || se.Err.Code == "already_decided"):
		return &conflictError{errors.New(se.Err.Message), se.Err.Code == "expired"}
	}
	return err
}

// permissionError is a refusal to let this caller act (EX_NOPERM).
type permissionError struct{ err error }

func (e *permissionError) Error() string { return e.err.Error() }

// conflictError is a decision on an approval that is no longer pending.
type conflictError struct {
	err     error
	expired bool
}

func (e *conflictError) Error() string { return e.err.Error() }

const approverExitStatus = `EXIT STATUS
   0    done
   64   bad command line
   65   no approval with that id
   69   the daemon is not running
   75   the approval had already expired: nothing was decided
   77   refused: a gated session cannot decide its own approvals
   79   the approval was already decided by someone else`

func pendingCommand() *cli.Command {
	return &cli.Command{
		Name:  "pending",
		Usage: "list the asks waiting for a person",
		Description: `Lists every pending approval: its id, the session, the tool and its input in
short, the rule that asked, and the time left before it expires (and is denied
approval_expired).

EXAMPLES
   toolgate pending
   toolgate pending --json | jq -r '.approvals[].approval.id'

` + approverExitStatus,
		Flags: []cli.Flag{jsonFlag()},
		Action: func(cliCtx *cli.Context) error {
			client, err := approverClient(cliCtx.Context)
			if err != nil {
				return err
			}
			list, err := client.Pending(cliCtx.Context)
			if err != nil {
				return approverError(err)
			}
			if cliCtx.Bool("json") {
				return writeJSON(cliCtx.App.Writer, struct {
					SchemaVersion int                  `json:"schema_version"`
					Approvals     []api.ApprovalDetail `json:"approvals"`
				}{1, list})
			}
			for _, a := range list {
				printApproval(cliCtx.App.Writer, a)
			}
			return nil
		},
	}
}

func printApproval(w io.Writer, d api.ApprovalDetail) {
	a := d.Approval
	rule := "the default"
	if a.MatchedRule != nil {
		rule = "rule " + *a.MatchedRule
	}
	fmt.Fprintf(w, "%s  %s  %s: %s\n", a.ID, a.Status, a.ToolName, render.Summary(a.ToolName, a.Input, 60))
	left := time.Until(a.ExpiresAt).Round(time.Second)
	if a.Status == "pending" {
		fmt.Fprintf(w, "    asked by %s (reason_code %s), session %s, expires in %s\n", rule, d.ReasonCode, a.SessionID, left)
	} else {
		fmt.Fprintf(w, "    asked by %s, session %s\n", rule, a.SessionID)
	}
}

func showCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "show one approval: the record, the decision and the write-back",
		ArgsUsage: "ID",
		Description: `EXAMPLES
   toolgate show apr_01J...
   toolgate show --json apr_01J...

` + approverExitStatus,
		Flags: []cli.Flag{jsonFlag()},
		Action: func(cliCtx *cli.Context) error {
			id, err := oneID(cliCtx)
			if err != nil {
				return err
			}
			client, err := approverClient(cliCtx.Context)
			if err != nil {
				return err
			}
			d, err := client.Approval(cliCtx.Context, id)
			if err != nil {
				return approverError(err)
			}
			if cliCtx.Bool("json") {
				return writeJSON(cliCtx.App.Writer, struct {
					SchemaVersion int `json:"schema_version"`
					api.ApprovalDetail
				}{1, d})
			}
			w := cliCtx.App.Writer
			printApproval(w, d)
			fmt.Fprintf(w, "    input: %s\n", strings.TrimSpace(string(d.Approval.Input)))
			if dec := d.Decision; dec != nil {
				fmt.Fprintf(w, "    %s by %s (pid %d, %s) at %s, reason_code %s\n", dec.Decision, dec.Actor, dec.ActorPID,
					dec.ActorExe, dec.DecidedAt.Local().Format(time.RFC3339), dec.ReasonCode)
				if dec.Note != "" {
					fmt.Fprintf(w, "    note: %s\n", dec.Note)
				}
			}
			if wb := d.WriteBack; wb != nil {
				fmt.Fprintf(w, "    written back to claude: %s (reason_code %s)\n", wb.Effect, wb.ReasonCode)
			}
			return nil
		},
	}
}

func decideCommand(name, usage string) *cli.Command {
	return &cli.Command{
		Name:      name,
		Usage:     usage,
		ArgsUsage: "ID",
		Description: `Decides a pending approval. The daemon records who decided from your process's
identity (user, pid, executable); --reason is kept in the audit and never shown
to the model. Quiet on success.

EXAMPLES
   toolgate ` + name + ` apr_01J...
   toolgate ` + name + ` apr_01J... --reason "checked the diff"

` + approverExitStatus,
		Flags: []cli.Flag{&cli.StringFlag{Name: "reason", Usage: "your note, for the audit"}},
		Action: func(cliCtx *cli.Context) error {
			id, err := oneID(cliCtx)
			if err != nil {
				return err
			}
			return runDecide(cliCtx.Context, id, name, cliCtx.String("reason"))
		},
	}
}

func runDecide(ctx context.Context, id, decision, reason string) error {
	client, err := approverClient(ctx)
	if err != nil {
		return err
	}
	_, err = client.Decide(ctx, id, api.DecideRequest{Decision: decision, Reason: reason})
	if err != nil {
		return approverError(err)
	}
	return nil
}

func oneID(cliCtx *cli.Context) (string, error) {
	if cliCtx.NArg() != 1 {
		return "", usagef("%s takes one approval id (see toolgate pending)", cliCtx.Command.Name)
	}
	return cliCtx.Args().First(), nil
}
