package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/render"
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
	if fe := fleetError(err); fe != err {
		return fe // the fleet's database, out of reach
	}
	switch {
	case api.IsUnavailable(err):
		return &gateUnavailable{fmt.Errorf("%w\nTry: toolgate serve, or check that toolgate run is running", err)}
	case errors.As(err, &se) && se.Err.Code == "not_found":
		return &dataError{fmt.Errorf("no such approval\nTry: toolgate pending")}
	case errors.As(err, &se) && se.Err.Code == "self_approval":
		return &permissionError{errors.New(se.Err.Message)}
	case errors.As(err, &se) && se.Err.Code == "fleet":
		return &permissionError{errors.New(se.Err.Message)}
	case errors.As(err, &se) && (se.Err.Code == "expired" || se.Err.Code == "already_decided"):
		return &conflictError{errors.New(se.Err.Message), se.Err.Code == "expired"}
	}
	return err
}

const approverExitStatus = `EXIT STATUS
   0    done
   64   bad command line
   65   no approval with that id
   69   the daemon is not running
   75   the approval had already expired: nothing was decided
   77   refused: a gated session cannot decide its own approvals
   79   the approval was already decided by someone else`

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

func oneID(cliCtx *cli.Context) (string, error) {
	if cliCtx.NArg() != 1 {
		return "", usagef("%s takes one approval id (see toolgate pending)", cliCtx.Command.Name)
	}
	return cliCtx.Args().First(), nil
}
