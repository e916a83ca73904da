package ledger

import (
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/api"
)

// ConflictError is a tool_use_id proposed again with a different input.
type ConflictError struct {
	Existing api.Call
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("tool_use_id %s was already proposed with a different input", e.Existing.ToolUseID)
}

// TerminalError is a change asked of an approval that is no longer pending.
type TerminalError struct {
	Approval api.Approval
	Decision *api.Decision // the decision that made it terminal, when known
	// ExpiredNow: the approval's time had run out and this very request
	// expired it, a change the caller may need to announce.
	ExpiredNow bool
}

func (e *TerminalError) Error() string {
	return fmt.Sprintf("approval %s is already %s", e.Approval.ID, e.Approval.Status)
}

// Withdrawn says the approval was settled because the run that asked was
// stopped: nobody decided it, and its time did not run out.
func (e *TerminalError) Withdrawn() bool {
	return e.Decision != nil && e.Decision.Actor == api.ActorWithdrawn
}

// AnsweredInDialog says the approval was closed because a person answered
// Claude Code's own dialog first and the call ran: it was decided there.
func (e *TerminalError) AnsweredInDialog() bool {
	return e.Decision != nil && e.Decision.Actor == api.ActorClaudeDialog
}

// AlreadyDecidedError is a decision recorded for a call that has a terminal one.
type AlreadyDecidedError struct {
	Call api.Call
}

func (e *AlreadyDecidedError) Error() string {
	return fmt.Sprintf("call %s was already decided: %s", e.Call.ToolUseID, e.Call.Effect)
}

// DuplicateExecutionError is a second execution recorded for one
// tool_use_id. The duplicate itself is recorded in the audit.
type DuplicateExecutionError struct {
	Call api.Call
}

func (e *DuplicateExecutionError) Error() string {
	return fmt.Sprintf("tool_use_id %s was executed %d times", e.Call.ToolUseID, e.Call.Executions)
}

// IsConflict reports whether err is a *ConflictError.
func IsConflict(err error) bool { var e *ConflictError; return errors.As(err, &e) }

// IsTerminal reports whether err is a *TerminalError.
func IsTerminal(err error) bool { var e *TerminalError; return errors.As(err, &e) }

// IsDuplicateExecution reports whether err is a *DuplicateExecutionError.
func IsDuplicateExecution(err error) bool { var e *DuplicateExecutionError; return errors.As(err, &e) }

// IsAlreadyDecided reports whether err is an *AlreadyDecidedError.
func IsAlreadyDecided(err error) bool { var e *AlreadyDecidedError; return errors.As(err, &e) }
