package policy

import (
	"encoding/json"
	"fmt"

	"github.com/toolgate/toolgate/api"
)

// Document is the policy file as written. Its field names are the wire
// names of the approval flow's policy format; everything beyond
// version/default/rules is an additive extension.
type Document struct {
	Schema  string     `json:"$schema,omitempty"`
	Version int        `json:"version"`
	Default api.Effect `json:"default"`
	Rules   []RuleDoc  `json:"rules"`
	// Paths are lists of paths by name, for the rules' path_in and
	// argument_in (pathlist.go).
	Paths   map[string][]string        `json:"paths,omitempty"`
	Schemas map[string]json.RawMessage `json:"schemas,omitempty"`
	Tests   []TestDoc                  `json:"tests,omitempty"`
}

// RuleDoc is one rule as written.
type RuleDoc struct {
	ID         string                  `json:"id"`
	Effect     api.Effect              `json:"effect"`
	Tool       string                  `json:"tool"`
	Input      map[string]ConditionDoc `json:"input,omitempty"`
	ReasonCode string                  `json:"reason_code,omitempty"`
	Message    string                  `json:"message,omitempty"`
	// ApprovalTimeout is how long an ask by this rule waits for a person
	// ("10m"); the run's --approval-timeout when empty.
	ApprovalTimeout string `json:"approval_timeout,omitempty"`
	Description     string `json:"description,omitempty"`
}

// ConditionDoc is the condition on one input key. Several operators in one
// condition must all hold.
type ConditionDoc struct {
	Const     json.RawMessage   `json:"const,omitempty"`
	Enum      []json.RawMessage `json:"enum,omitempty"`
	Prefix    *string           `json:"prefix,omitempty"`
	Pattern   *string           `json:"pattern,omitempty"`
	PathUnder *string           `json:"path_under,omitempty"`
	Command   [][]string        `json:"command,omitempty"`
	// ArgumentUnder: a shell command line in which a program gets a path
	// under one of these directories (argument or redirection target).
	ArgumentUnder []string `json:"argument_under,omitempty"`
	// PathIn: a path under an entry of the document's path list of this
	// name; ArgumentIn: a shell command line in which some program gets
	// one (as argument_under).
	PathIn *string `json:"path_in,omitempty"`
	// ArgumentOutside: a shell command line in which some program gets a
	// path that is under none of these entries.
	ArgumentOutside []string `json:"argument_outside,omitempty"`
	ArgumentIn      *string  `json:"argument_in,omitempty"`
}

// TestDoc is an inline example that must hold for the document to load.
type TestDoc struct {
	Name       string          `json:"name"`
	Call       CallDoc         `json:"call"`
	Expect     api.Effect      `json:"expect"`
	Rule       json.RawMessage `json:"rule,omitempty"` // a rule id, or null for the default
	ReasonCode string          `json:"reason_code,omitempty"`
}

// CallDoc is a tool call in the approval flow's tool_use shape:
// {"type": "tool_use", "id", "name", "input"}; type and id are optional.
type CallDoc struct {
	Type  string          `json:"type,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	Cwd   string          `json:"cwd,omitempty"`
}

// ParseCall reads one tool call as a person pastes it: the approval flow's
// tool_use block {"type":"tool_use","id","name","input"}, the short
// {"name","input"}, or a Claude Code hook event
// {"tool_name","tool_input","cwd"}.
func ParseCall(data []byte) (CallDoc, error) {
	var raw struct {
		CallDoc
		ToolName  string          `json:"tool_name"`
		ToolInput json.RawMessage `json:"tool_input"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return CallDoc{}, fmt.Errorf("call is not JSON: %w", err)
	}
	c := raw.CallDoc
	if c.Name == "" {
		c.Name, c.Input = raw.ToolName, raw.ToolInput
	}
	if c.Name == "" {
		return CallDoc{}, fmt.Errorf(`call has no tool name: want {"name": "...", "input": {...}}`)
	}
	if c.Input == nil {
		return CallDoc{}, fmt.Errorf("call to %s has no input object", c.Name)
	}
	return c, nil
}
