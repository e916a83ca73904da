package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/toolgate/toolgate/policy"
)

// Exit codes follow sysexits(3). This is the only place errors become exit
// codes; the table is repeated in the README, docs/usage.md and toolgate --help.
const (
	exitOK          = 0
	exitFailure     = 1  // anything not listed below
	exitUsage       = 64 // EX_USAGE: bad command line
	exitDataErr     = 65 // EX_DATAERR: bad input data (a --call that is not a tool call)
	exitNoInput     = 66 // EX_NOINPUT: a named file does not exist or cannot be read
	exitUnavailable = 69 // EX_UNAVAILABLE: the gate (daemon or ledger) is unavailable
	exitCantCreat   = 73 // EX_CANTCREAT: a file toolgate must write cannot be created
	exitTempFail    = 75 // EX_TEMPFAIL: an approval expired; retry later
	exitNoPerm      = 77 // EX_NOPERM: a call was denied
	exitConfig      = 78 // EX_CONFIG: the policy document is invalid
	exitConflict    = 79 // the approval was already decided, or expired
	exitLoosens     = 80 // policy diff: the new policy loosens a decision
	exitDeferred    = 81 // run --on-ask defer: a call waits for a person; toolgate resume goes on
	exitInterrupted = 130
)

const exitStatusHelp = `EXIT STATUS
   0    success
   1    an unexpected error
   64   bad command line (EX_USAGE)
   65   bad input data, such as a --call that is not a tool call (EX_DATAERR)
   66   a named file does not exist or cannot be read (EX_NOINPUT)
   69   the gate could not start: daemon or ledger unavailable (EX_UNAVAILABLE)
   73   a file toolgate must write cannot be created, such as --report (EX_CANTCREAT)
   75   an approval expired before anyone decided: retry later (EX_TEMPFAIL)
   77   a call was denied by policy, a person or a schema (EX_NOPERM)
   78   the policy document is invalid (EX_CONFIG)
   79   the approval was already decided, or expired
   80   policy diff: the new policy loosens a decision
   81   run --on-ask defer: a call waits for a person (toolgate resume goes on)
   130  interrupted`

// dataError is input data that cannot be used.
type dataError struct{ err error }

func (e *dataError) Error() string { return e.err.Error() }
func (e *dataError) Unwrap() error { return e.err }

// exitStatus is an error that already carries its exit code and whose
// message, if any, has already been shown.
type exitStatus struct{ code int }

func (e *exitStatus) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// exitCode prints err (unless it was already shown) and picks the exit code.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var status *exitStatus
	if errors.As(err, &status) {
		return status.code
	}
	fmt.Fprintf(stderr, "toolgate: %v\n", err)
	var usage *usageError
	var data *dataError
	var unavailable *gateUnavailable
	var perm *permissionError
	var conflict *conflictError
	var loosened *loosenedError
	var cantCreate *cantCreateError
	switch {
	case errors.As(err, &usage):
		fmt.Fprintln(stderr, usage.hint())
		return exitUsage
	case policy.IsInvalid(err), errors.As(err, new(*configError)):
		return exitConfig
	case errors.As(err, &data):
		return exitDataErr
	case errors.As(err, &unavailable):
		return exitUnavailable
	case errors.As(err, &perm):
		return exitNoPerm
	case errors.As(err, &conflict) && conflict.expired:
		return exitTempFail
	case errors.As(err, &conflict):
		return exitConflict
	case errors.As(err, &loosened):
		return exitLoosens
	case errors.As(err, &cantCreate):
		return exitCantCreat
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		return exitNoInput
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	default:
		return exitFailure
	}
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

// loosenedError is a policy change that loosens a decision (policy diff),
// so that a check of a policy pull request fails.
type loosenedError struct{ msg string }

func (e *loosenedError) Error() string { return e.msg }

// configError is a configuration that would take calls around the gate
// (EX_CONFIG), beside an invalid policy.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// cantCreateError is a file toolgate must write that cannot be created.
type cantCreateError struct{ err error }

func (e *cantCreateError) Error() string { return e.err.Error() }
func (e *cantCreateError) Unwrap() error { return e.err }

// gateUnavailable is the gate's daemon or ledger being out of reach.
type gateUnavailable struct{ err error }

func (e *gateUnavailable) Error() string { return e.err.Error() }
func (e *gateUnavailable) Unwrap() error { return e.err }
