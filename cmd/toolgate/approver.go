package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/render"
	"github.com/urfave/cli/v2"
)

// approverClient is the client of the approvers' socket of the daemon that
// serves the ledger, wherever it was started. It starts none: an ask waits
// only while a daemon runs, so with none there is nothing to decide, and a
// person's command must not leave a daemon behind (exit 69).
func approverClient() *client.Client { return personClient(livePaths().ApproveSocket()) }

// followingClient looks for the daemon again on every connection: watch
// and notify wait for one to start.
func followingClient() *client.Client {
	c := personClient("")
	c.Locate = func() string { return livePaths().ApproveSocket() }
	return c
}

// personClient is a client of the daemon for a person's command: it
// believes only a toolgate daemon without no_new_privs (client.Trust), not
// whatever a process of the user's put on the socket's path.
func personClient(socket string) *client.Client {
	c := client.NewClient(socket)
	self, _ := os.Executable()
	// Inside a contained session (a command the model runs) the daemon's
	// executable cannot be read: the checks from inside apply, and the
	// daemon then refuses what such a process asks of it.
	c.VerifyPeer = client.Trust{Exe: self, AnyToolgate: true, Contained: os.Getenv("TOOLGATE_CONTAINED") == "1"}.Verify
	return c
}

// approverError turns the daemon's refusals into what a person reads and
// the exit code a script reads.
func approverError(err error) error {
	var se *client.StatusError
	if fe := fleetError(err); fe != err {
		return fe // the fleet's database, out of reach
	}
	switch {
	case client.IsUnavailable(err):
		return notRunning(err)
	case errors.As(err, &se) && se.Err.Code == "not_found":
		return &dataError{fmt.Errorf("%s in the ledger\nTry: toolgate pending", strings.TrimSuffix(se.Err.Message, ": not found"))}
	case errors.As(err, &se) && se.Err.Code == "self_approval":
		return &permissionError{errors.New(se.Err.Message)}
	case errors.As(err, &se) && se.Err.Code == "fleet":
		return &permissionError{errors.New(se.Err.Message)}
	case errors.As(err, &se) && (se.Err.Code == "expired" || se.Err.Code == "already_decided"):
		return &conflictError{errors.New(se.Err.Message), se.Err.Code == "expired"}
	}
	return err
}

// notRunning is the daemon out of reach, said for a person.
func notRunning(err error) error {
	var ue *client.UnavailableError
	if errors.As(err, &ue) && (errors.Is(ue.Err, syscall.ENOENT) || errors.Is(ue.Err, syscall.ECONNREFUSED)) {
		return &gateUnavailable{fmt.Errorf("no toolgate daemon is running (nothing listens on %s), so no ask is waiting\n"+
			"Try: toolgate daemon status; asks wait while a toolgate run or an installed session runs", ue.SocketPath)}
	}
	return &gateUnavailable{fmt.Errorf("%w\nTry: toolgate daemon status, or toolgate doctor", err)}
}

const decideExitStatus = `EXIT STATUS
   0    done
   64   bad command line
   65   no approval with that id
   69   no daemon is running (it starts none: with none, no ask waits)
   75   the approval had already expired: nothing was decided
   77   refused: a gated session cannot decide its own approvals
   79   the approval was already decided, or expired`

func printApproval(w io.Writer, d api.ApprovalDetail) {
	a := d.Approval
	rule := "the default"
	if a.MatchedRule != nil {
		rule = "rule " + *a.MatchedRule
	}
	fmt.Fprintf(w, "%s  %s  %s: %s\n", a.ID, a.Status, a.ToolName, render.Summary(a.ToolName, a.Input, 60))
	left := time.Until(a.ExpiresAt).Round(time.Second)
	if a.Status == "pending" {
		fmt.Fprintf(w, "    asked by %s, session %s, expires in %s\n", joinSet(" ", rule, parens(labelled("reason_code", d.ReasonCode))), a.SessionID, left)
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
