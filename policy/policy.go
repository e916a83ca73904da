package policy

import (
	"fmt"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
)

// Policy is a compiled, immutable policy document. It is safe for
// concurrent use.
type Policy struct {
	Version int        // the document's "version"
	Default api.Effect // the document's "default"
	SHA256  string     // hex sha256 of the document's bytes, as read

	doc      Document
	rules    []*rule
	warnings []*LoadError
	byOrder  [3]ruleIndex // deny, ask, allow
	schemas  *SchemaSet
}

// ruleIndex holds the rules of one effect: by exact tool name, and the ones
// whose tool is a glob. Each list is in file order.
type ruleIndex struct {
	exact map[string][]*rule
	globs []*rule
	all   []*rule
}

// candidates calls fn with every rule of the index that may apply to tool,
// in file order, until fn returns false.
func (ix *ruleIndex) candidates(tool string, fn func(*rule) bool) {
	exact, globs := ix.exact[tool], ix.globs
	for len(exact) > 0 || len(globs) > 0 {
		var r *rule
		if len(globs) == 0 || len(exact) > 0 && exact[0].pos < globs[0].pos {
			r, exact = exact[0], exact[1:]
		} else {
			r, globs = globs[0], globs[1:]
			if !r.glob.match(tool) {
				continue
			}
		}
		if !fn(r) {
			return
		}
	}
}

// Call is one tool call to decide.
type Call struct {
	Tool  string
	Input []byte // the tool input as JSON, exactly as submitted
	Cwd   string // where the call runs: relative paths in its input resolve against it
	Home  string // the home directory "~" expands to
	// Project is the session's directory: relative paths in the rules
	// (path_under ".env") resolve against it. Empty: Cwd.
	Project string
}

// Document returns the document the policy was compiled from.
func (p *Policy) Document() Document { return p.doc }

// Rules returns the rules as written, in file order.
func (p *Policy) Rules() []RuleDoc { return p.doc.Rules }

// LongestApprovalTimeout is the longest approval_timeout a rule of the
// policy gives its asks, or 0 when none gives one.
func (p *Policy) LongestApprovalTimeout() time.Duration {
	var longest time.Duration
	for _, group := range p.byOrder {
		for _, r := range group.all {
			longest = max(longest, r.timeout)
		}
	}
	return longest
}

// Decide returns the rules' verdict on one call (source "policy"; the
// rule's approval_timeout on an ask; the message for the model on a deny).
// It never fails: input that is not a JSON object is denied schema_invalid,
// and anything the matcher does not understand never loosens the outcome.
// It does not check the input against a schema: Session.Evaluate does.
func (p *Policy) Decide(c Call) api.Verdict {
	return p.evaluate(c, nil)
}

// Trace is one rule's part in an explained decision.
type Trace struct {
	RuleID  string
	Effect  api.Effect
	Matched bool
	Why     string
}

// Explain decides like Decide and also says, for every rule in evaluation
// order, whether it matched and why.
func (p *Policy) Explain(c Call) (api.Verdict, []Trace) {
	var traces []Trace
	return p.evaluate(c, &traces), traces
}

func (p *Policy) evaluate(c Call, traces *[]Trace) api.Verdict {
	if !gjson.ValidBytes(c.Input) || !gjson.ParseBytes(c.Input).IsObject() {
		v := api.Deny(api.ReasonSchemaInvalid, api.SourceSchema)
		v.Message = api.DenyMessage(v, "The input is not a JSON object.")
		return v
	}
	ev := &evalCtx{call: c, input: string(c.Input)}
	if traces != nil {
		return p.explain(ev, traces)
	}
	var decided *rule
	for i := range p.byOrder {
		p.byOrder[i].candidates(c.Tool, func(r *rule) bool {
			if ok, _ := r.match(ev, false); ok {
				decided = r
			}
			return decided == nil
		})
		if decided != nil {
			return verdict(decided)
		}
	}
	return p.byDefault()
}

// explain evaluates every rule in order, saying why each matched or missed.
func (p *Policy) explain(ev *evalCtx, traces *[]Trace) api.Verdict {
	var decided *rule
	for i := range p.byOrder {
		for _, r := range p.byOrder[i].all {
			t := Trace{RuleID: r.id, Effect: r.effect}
			switch {
			case decided != nil:
				t.Why = "not evaluated: rule " + decided.id + " decided"
			case !r.glob.match(ev.call.Tool):
				t.Why = fmt.Sprintf("tool %q does not match %q", ev.call.Tool, r.tool)
			default:
				t.Matched, t.Why = r.match(ev, true)
				if t.Matched {
					decided = r
				}
			}
			*traces = append(*traces, t)
		}
	}
	if decided == nil {
		return p.byDefault()
	}
	return verdict(decided)
}

// verdict is the verdict of a rule that matched.
func verdict(r *rule) api.Verdict {
	v := api.Verdict{Effect: r.effect, RuleID: r.id, ReasonCode: r.reasonCode, Source: api.SourcePolicy}
	switch r.effect {
	case api.EffectDeny:
		v.Message = api.DenyMessage(v, r.message)
	case api.EffectAsk:
		v.ApprovalTimeout = api.Duration(r.timeout)
	}
	return v
}

// byDefault is the verdict when no rule matched.
func (p *Policy) byDefault() api.Verdict {
	v := api.Verdict{Effect: p.Default, ReasonCode: api.ReasonDefault, Source: api.SourcePolicy}
	if v.Effect == api.EffectDeny {
		v.Message = api.DenyMessage(v, "")
	}
	return v
}

func (p *Policy) index() {
	for i, r := range p.rules {
		r.pos = i
		r.glob = newToolGlob(r.tool)
		ix := &p.byOrder[effectOrder(r.effect)]
		ix.all = append(ix.all, r)
		if strings.Contains(r.tool, "*") {
			ix.globs = append(ix.globs, r)
			continue
		}
		if ix.exact == nil {
			ix.exact = map[string][]*rule{}
		}
		ix.exact[r.tool] = append(ix.exact[r.tool], r)
	}
}

func effectOrder(e api.Effect) int {
	switch e {
	case api.EffectDeny:
		return 0
	case api.EffectAsk:
		return 1
	}
	return 2
}

// toolGlob is a tool name pattern: an exact name, or a glob in which *
// stands for any run of characters, including none.
type toolGlob struct {
	pattern string
	parts   []string // the pattern split at '*'; nil for an exact name
}

func newToolGlob(pattern string) toolGlob {
	g := toolGlob{pattern: pattern}
	if strings.Contains(pattern, "*") {
		g.parts = strings.Split(pattern, "*")
	}
	return g
}

func (g toolGlob) match(name string) bool {
	if g.parts == nil {
		return g.pattern == name
	}
	first, last := g.parts[0], g.parts[len(g.parts)-1]
	if !strings.HasPrefix(name, first) {
		return false
	}
	name = name[len(first):]
	for _, part := range g.parts[1 : len(g.parts)-1] {
		i := strings.Index(name, part)
		if i < 0 {
			return false
		}
		name = name[i+len(part):]
	}
	return strings.HasSuffix(name, last)
}
