package policy

import (
	"errors"
	"fmt"
	"strings"
)

// LoadError is one problem found while loading a policy document. It names
// the place precisely enough for a person to fix it: file, line:column and,
// where the problem is inside a rule, the rule's id.
type LoadError struct {
	File   string
	Line   int // 1-based; 0 when the problem has no single place
	Col    int
	RuleID string
	Msg    string

	ptr string // JSON pointer of the problem, for deduplication
}

func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	if e.RuleID != "" {
		fmt.Fprintf(&b, "rule %q: ", e.RuleID)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// LoadErrors is every problem found in one document; Load reports them all
// at once so that a person can fix a policy in one pass.
type LoadErrors []*LoadError

func (es LoadErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// IsInvalid reports whether err says that a policy document is invalid (as
// opposed to, say, unreadable).
func IsInvalid(err error) bool {
	var es LoadErrors
	var e *LoadError
	return errors.As(err, &es) || errors.As(err, &e)
}

// SchemaError is a tool input that failed its JSON Schema.
type SchemaError struct {
	Tool    string
	Pointer string // JSON pointer of the first failing value; "" for the whole input
	Msg     string
}

func (e *SchemaError) Error() string {
	where := e.Pointer
	if where == "" {
		where = "/"
	}
	return fmt.Sprintf("input of %s at %s: %s", e.Tool, where, e.Msg)
}
