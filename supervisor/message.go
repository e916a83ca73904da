package supervisor

import (
	"fmt"

	"github.com/toolgate/toolgate/policy"
)

// schemaMessage names the first failing field of a schema check.
func schemaMessage(se *policy.SchemaError) string {
	where := se.Pointer
	if where == "" {
		where = "the input"
	}
	return fmt.Sprintf("%s: %s.", where, se.Msg)
}
