package fleet

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// UnavailableError is Postgres out of reach (or refusing the connection).
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string { return "fleet database: " + e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

// Refusals of toolgate.decide, by SQLSTATE.
const (
	codeNotFound = "TG404"
	codeDecided  = "TG409"
	codeExpired  = "TG410"
	codeNoPerm   = "42501" // insufficient_privilege
)

// RefusedError is a decision the arbiter refused: the approval is
// unknown, already decided or expired, or the role may not decide.
type RefusedError struct {
	NotFound   bool
	Expired    bool
	Decided    bool
	Permission bool
	Message    string
}

func (e *RefusedError) Error() string { return e.Message }

// refusal turns Postgres's refusal into a *RefusedError, or returns err.
func refusal(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	r := &RefusedError{Message: pe.Message}
	switch pe.Code {
	case codeNotFound:
		r.NotFound = true
	case codeDecided:
		r.Decided = true
	case codeExpired:
		r.Expired = true
	case codeNoPerm:
		r.Permission = true
		r.Message = fmt.Sprintf("Postgres refused: %s (this role may not decide: use an approver's credentials)", pe.Message)
	default:
		return err
	}
	return r
}

func isDuplicate(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42710"
}
