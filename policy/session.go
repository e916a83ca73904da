package policy

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
)

// Session is what the gate knows when it decides a call of one session:
// the session's policy, what its MCP servers published about their tools,
// and where it runs. It is immutable and safe for concurrent use.
type Session struct {
	Policy    *Policy
	Cwd, Home string // the session's project and home
	// callCwd is where the call being decided runs, when not in Cwd (In).
	callCwd string
	// Guard is checked before anything else; nil guards nothing (policy
	// test on its own).
	Guard *Guard

	discovered   *SchemaSet
	requiresUser map[string]bool
}

// NewSession readies a session's decisions. A schema an MCP server
// published that does not compile is left out: the tool's server wrote
// it, the policy's author cannot fix it.
func NewSession(p *Policy, tools []api.ToolInfo, cwd, home string) *Session {
	s := &Session{Policy: p, Cwd: cwd, Home: home, requiresUser: map[string]bool{}}
	schemas := map[string]json.RawMessage{}
	for _, t := range tools {
		if t.RequiresUserInteraction {
			s.requiresUser[t.Name] = true
		}
		if len(t.InputSchema) > 0 {
			schemas[t.Name] = t.InputSchema
		}
	}
	s.discovered = compileEach(schemas)
	return s
}

// In is the session deciding a call that runs in cwd (an absolute path;
// anything else keeps the session's own directory).
func (s *Session) In(cwd string) *Session {
	if !path.IsAbs(cwd) || cwd == s.Cwd {
		return s
	}
	c := *s
	c.callCwd = path.Clean(cwd)
	return &c
}

// call is the policy's view of a call of this session.
func (s *Session) call(tool string, input []byte) Call {
	return Call{Tool: tool, Input: input, Cwd: cmp.Or(s.callCwd, s.Cwd), Home: s.Home, Project: s.Cwd}
}

// compileEach compiles the schemas, keeping every one that compiles.
func compileEach(schemas map[string]json.RawMessage) *SchemaSet {
	set, err := CompileSchemas(schemas)
	if err == nil {
		return set
	}
	good := map[string]json.RawMessage{}
	for name, raw := range schemas {
		if _, err := CompileSchemas(map[string]json.RawMessage{name: raw}); err == nil {
			good[name] = raw
		}
	}
	set, _ = CompileSchemas(good)
	return set
}

// Evaluate decides one call on its own merits, as the gate does before it
// records the call: what the guard forbids is denied toolgate_guard; a tool
// that needs a person at the interactive UI is denied
// requires_user_interaction; input that fails the tool's schema
// (the policy's own, else the one its MCP server published) is denied
// schema_invalid; then the rules decide. It is pure: the same session and
// call always get the same verdict.
func (s *Session) Evaluate(tool string, input []byte) api.Verdict {
	if rule, _, denied := s.Guard.check(s.call(tool, input)); denied {
		// The model is not told which of the gate's paths it named.
		v := api.Verdict{Effect: api.EffectDeny, RuleID: rule, ReasonCode: api.ReasonToolgateGuard, Source: api.SourceGuard}
		v.Message = api.DenyMessage(v, "")
		return v
	}
	if s.requiresUser[tool] {
		return api.Deny(api.ReasonRequiresUser, api.SourceDowngrade)
	}
	if se := s.SchemaError(tool, input); se != nil {
		v := api.Deny(api.ReasonSchemaInvalid, api.SourceSchema)
		v.Message = api.DenyMessage(v, se.Detail())
		return v
	}
	v := s.Policy.Decide(s.call(tool, input))
	if command, ok := shellCommand(tool, input); ok {
		// The command runs as a Bash command would: the Bash rules decide
		// it too, and the stricter verdict stands.
		as := s.Policy.Decide(s.call("Bash", bashInput(command)))
		if stricter(as.Effect, v.Effect) {
			v = as
		}
	}
	return v
}

// shellCommand is the shell command a tool other than Bash runs, when its
// input has one: Claude Code's Monitor runs its command in a shell, and a
// built-in tool with a command field is taken to (MCP tools are the
// user's servers' own, and their rules decide them).
func shellCommand(tool string, input []byte) (string, bool) {
	if tool == "Bash" {
		return "", false
	}
	return runsCommand(tool, input)
}

// runsCommand is the shell command a built-in tool runs, Bash included.
func runsCommand(tool string, input []byte) (string, bool) {
	if strings.HasPrefix(tool, "mcp__") {
		return "", false
	}
	c := gjson.GetBytes(input, "command")
	return c.Str, c.Type == gjson.String || tool == "Bash"
}

// bashInput is a Bash call's input for command.
func bashInput(command string) []byte {
	b, _ := json.Marshal(map[string]string{"command": command})
	return b
}

// stricter reports whether effect a is stricter than b: deny, then ask,
// then allow.
func stricter(a, b api.Effect) bool { return strictness(a) > strictness(b) }

func strictness(e api.Effect) int {
	switch e {
	case api.EffectDeny:
		return 2
	case api.EffectAsk:
		return 1
	}
	return 0
}

// SchemaError is the first failure of the input against the tool's
// schema, or nil when it is valid or there is no schema.
func (s *Session) SchemaError(tool string, input []byte) *SchemaError {
	var se *SchemaError
	if err := s.Policy.Validate(tool, input, s.discovered); errors.As(err, &se) {
		return se
	}
	return nil
}

// Detail names the failing field for the model: "/base: want string."
func (e *SchemaError) Detail() string {
	where := e.Pointer
	if where == "" {
		where = "the input"
	}
	return fmt.Sprintf("%s: %s.", where, e.Msg)
}

// Explain decides like Evaluate and says why: the guard's rules first,
// then every rule of the policy in evaluation order.
func (s *Session) Explain(tool string, input []byte) (api.Verdict, []Trace) {
	c := s.call(tool, input)
	rule, why, denied := s.Guard.check(c)
	var traces []Trace
	if s.Guard != nil {
		for _, id := range []string{GuardFiles, GuardCommands} {
			t := Trace{RuleID: id, Effect: api.EffectDeny, Why: "built in: no session may touch toolgate or Claude Code's settings"}
			if id == rule {
				t.Matched, t.Why = true, why
			}
			traces = append(traces, t)
		}
	}
	if denied {
		return s.Evaluate(tool, input), traces
	}
	v, more := s.Policy.Explain(c)
	traces = append(traces, more...)
	if command, ok := shellCommand(tool, input); ok {
		as, bash := s.Policy.Explain(s.call("Bash", bashInput(command)))
		for _, t := range bash {
			t.Why = "as the Bash command it runs: " + t.Why
			traces = append(traces, t)
		}
		if stricter(as.Effect, v.Effect) {
			v = as
		}
	}
	if rest := s.Evaluate(tool, input); rest.Source != api.SourcePolicy {
		v = rest // a schema or a tool that needs a person decided first
	}
	return v, traces
}
