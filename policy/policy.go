package policy

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// Policy is a compiled, immutable policy document. It is safe for
// concurrent use.
type Policy struct {
	Version int    // the document's "version"
	Default Effect // the document's "default"
	SHA256  string // hex sha256 of the document's bytes, as read

	doc     Document
	rules   []*rule
	byOrder [3][]*rule // deny, ask, allow; each in file order
	schemas *SchemaSet
}

// Call is one tool call to decide.
type Call struct {
	Tool  string
	Input []byte // the tool input as JSON, exactly as submitted
	Cwd   string // the session's working directory; relative paths resolve against it
	Home  string // the home directory "~" expands to
}

// Decision is the outcome of Decide.
type Decision struct {
	Effect        Effect
	RuleID        string // "" when the default applied
	ReasonCode    string
	Message       string // the rule's message for the model, if it has one
	PolicyVersion int
	PolicySHA256  string
}

// Document returns the document the policy was compiled from.
func (p *Policy) Document() Document { return p.doc }

// Rules returns the rules as written, in file order.
func (p *Policy) Rules() []RuleDoc { return p.doc.Rules }

// Decide returns the policy's decision for one call. It never fails: input
// that is not a JSON object is denied schema_invalid, and anything the
// matcher does not understand never loosens the outcome.
func (p *Policy) Decide(c Call) Decision {
	d, _ := p.evaluate(c, nil)
	return d
}

// Trace is one rule's part in an explained decision.
type Trace struct {
	RuleID  string
	Effect  Effect
	Matched bool
	Why     string
}

// Explain decides like Decide and also says, for every rule in evaluation
// order, whether it matched and why.
func (p *Policy) Explain(c Call) (Decision, []Trace) {
	var traces []Trace
	d, _ := p.evaluate(c, &traces)
	return d, traces
}

func (p *Policy) evaluate(c Call, traces *[]Trace) (Decision, bool) {
	if !gjson.ValidBytes(c.Input) || !gjson.ParseBytes(c.Input).IsObject() {
		return p.decision(Deny, "", ReasonSchemaInvalid, ""), false
	}
	ev := &evalCtx{call: c}
	for _, rules := range p.byOrder {
		for _, r := range rules {
			if !matchTool(r.tool, c.Tool) {
				if traces != nil {
					*traces = append(*traces, Trace{r.id, r.effect, false, fmt.Sprintf("tool %q does not match %q", c.Tool, r.tool)})
				}
				continue
			}
			ok, why := r.match(ev, traces != nil)
			if traces != nil {
				*traces = append(*traces, Trace{r.id, r.effect, ok, why})
			}
			if ok && traces == nil {
				return p.decision(r.effect, r.id, r.reasonCode, r.message), true
			}
			if ok {
				d := p.decision(r.effect, r.id, r.reasonCode, r.message)
				p.traceRest(r, traces)
				return d, true
			}
		}
	}
	return p.decision(p.Default, "", ReasonDefault, ""), false
}

// traceRest marks every rule after the deciding one as not evaluated.
func (p *Policy) traceRest(decided *rule, traces *[]Trace) {
	after := false
	for _, rules := range p.byOrder {
		for _, r := range rules {
			if after {
				*traces = append(*traces, Trace{r.id, r.effect, false, "not evaluated: rule " + decided.id + " decided"})
			}
			after = after || r == decided
		}
	}
}

func (p *Policy) decision(e Effect, ruleID, reason, msg string) Decision {
	return Decision{Effect: e, RuleID: ruleID, ReasonCode: reason, Message: msg,
		PolicyVersion: p.Version, PolicySHA256: p.SHA256}
}

func (p *Policy) index() {
	for _, r := range p.rules {
		switch r.effect {
		case Deny:
			p.byOrder[0] = append(p.byOrder[0], r)
		case Ask:
			p.byOrder[1] = append(p.byOrder[1], r)
		case Allow:
			p.byOrder[2] = append(p.byOrder[2], r)
		}
	}
}

// matchTool matches a tool name against an exact name or a glob in which
// * stands for any run of characters, including none.
func matchTool(pattern, name string) bool {
	if !strings.Contains(pattern, "*") {
		return pattern == name
	}
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(name, part)
		if i < 0 {
			return false
		}
		name = name[i+len(part):]
	}
	return strings.HasSuffix(name, last)
}
