package policy

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/api"
)

// Impact is what a change of a policy can do to the decisions on calls,
// as far as the documents alone tell: the replay of recorded calls
// (Replayer) says what it did.
type Impact string

const (
	// ImpactLoosens: some call can now get a looser decision (deny to
	// ask or allow, ask to allow).
	ImpactLoosens Impact = "loosens"
	// ImpactMayLoosen: the documents cannot tell; a call may get a looser
	// decision.
	ImpactMayLoosen Impact = "may_loosen"
	// ImpactTightens: calls can only get stricter decisions.
	ImpactTightens Impact = "tightens"
	// ImpactNeutral: no call's effect changes; which rule decides, its
	// reason_code, message or approval_timeout may.
	ImpactNeutral Impact = "neutral"
)

// CanLoosen reports whether the change may make a decision looser.
func (i Impact) CanLoosen() bool { return i == ImpactLoosens || i == ImpactMayLoosen }

// Change kinds.
const (
	ChangeDefault    = "default"    // the document's default effect
	ChangeAdded      = "added"      // a rule only the new document has
	ChangeRemoved    = "removed"    // a rule only the old document has
	ChangeModified   = "changed"    // a rule both have, written differently
	ChangePrecedence = "precedence" // two rules of one effect swapped places
	ChangeSchema     = "schema"     // a tool input schema of the document's
	ChangePaths      = "paths"      // a path list of the document's
)

// RuleChange is one difference between two policy documents, by rule id.
type RuleChange struct {
	Kind   string     `json:"kind"`
	RuleID string     `json:"rule_id,omitempty"`
	Over   string     `json:"over,omitempty"` // precedence: the rule that RuleID now comes before
	Tool   string     `json:"tool,omitempty"` // schema: the tool
	List   string     `json:"list,omitempty"` // paths: the path list
	Old    *RuleDoc   `json:"old,omitempty"`
	New    *RuleDoc   `json:"new,omitempty"`
	Fields []string   `json:"fields,omitempty"` // changed: what differs (effect, tool, input.KEY, ...)
	From   api.Effect `json:"from,omitempty"`   // default: the effects
	To     api.Effect `json:"to,omitempty"`
	Impact Impact     `json:"impact"`
	Why    string     `json:"why"`
}

// permissiveness orders effects from the strictest: deny, ask, allow (the
// order rules are matched in).
func permissiveness(e api.Effect) int { return effectOrder(e) }

// Looser reports whether effect b lets more happen than a.
func Looser(a, b api.Effect) bool { return permissiveness(b) > permissiveness(a) }

// Diff compares two policies: their defaults, their rules by id (added,
// removed, changed; and rules of one effect whose order changed, so that
// another rule now decides the calls both match), and their tool input
// schemas. Each change says what it can do to decisions.
func Diff(old, new *Policy) []RuleChange {
	var out []RuleChange
	if old.Default != new.Default {
		out = append(out, defaultChange(old.Default, new.Default))
	}
	oldRules, newRules := byID(old.Rules()), byID(new.Rules())
	for _, r := range new.Rules() {
		o, ok := oldRules[r.ID]
		switch {
		case !ok:
			out = append(out, added(r, new.Default))
		case canonical(o) != canonical(r):
			out = append(out, modified(o, r, new.Default))
		}
	}
	for _, r := range old.Rules() {
		if _, ok := newRules[r.ID]; !ok {
			out = append(out, removed(r, new.Default))
		}
	}
	out = append(out, precedence(old.Rules(), new.Rules())...)
	out = append(out, schemaChanges(old.Document().Schemas, new.Document().Schemas)...)
	return append(out, pathListChanges(old.Document().Paths, new.Document())...)
}

// pathListChanges are the path lists whose entries differ. An entry
// removed may loosen what a deny or ask rule reading the list matched; one
// added, what an allow rule did.
func pathListChanges(old map[string][]string, new Document) []RuleChange {
	var out []RuleChange
	names := maps.Clone(old)
	maps.Copy(names, new.Paths)
	for _, name := range slices.Sorted(maps.Keys(names)) {
		added, removed := entriesDiff(old[name], new.Paths[name])
		if len(added) == 0 && len(removed) == 0 {
			continue
		}
		c := RuleChange{Kind: ChangePaths, List: name, Impact: ImpactTightens}
		for _, e := range added {
			c.Fields = append(c.Fields, "+"+e)
		}
		for _, e := range removed {
			c.Fields = append(c.Fields, "-"+e)
		}
		var why []string
		for _, r := range new.Rules {
			if !readsList(r, name) {
				continue
			}
			if len(removed) > 0 && r.Effect != api.EffectAllow || len(added) > 0 && r.Effect == api.EffectAllow {
				c.Impact = ImpactMayLoosen
				why = append(why, r.ID)
			}
		}
		c.Why = "the rules that read it match paths as the list now names them"
		if len(why) > 0 {
			c.Why = fmt.Sprintf("%s may now let through what the list named before", strings.Join(why, ", "))
		}
		out = append(out, c)
	}
	return out
}

func entriesDiff(old, new []string) (added, removed []string) {
	for _, e := range new {
		if !slices.Contains(old, e) {
			added = append(added, e)
		}
	}
	for _, e := range old {
		if !slices.Contains(new, e) {
			removed = append(removed, e)
		}
	}
	return added, removed
}

func readsList(r RuleDoc, name string) bool {
	for _, c := range r.Input {
		if c.PathIn != nil && *c.PathIn == name || c.ArgumentIn != nil && *c.ArgumentIn == name {
			return true
		}
	}
	return false
}

func byID(rules []RuleDoc) map[string]RuleDoc {
	m := make(map[string]RuleDoc, len(rules))
	for _, r := range rules {
		m[r.ID] = r
	}
	return m
}

func defaultChange(from, to api.Effect) RuleChange {
	c := RuleChange{Kind: ChangeDefault, From: from, To: to, Impact: ImpactTightens,
		Why: fmt.Sprintf("calls no rule matches get %s instead of %s", to, from)}
	if Looser(from, to) {
		c.Impact = ImpactLoosens
	}
	return c
}

func added(r RuleDoc, def api.Effect) RuleChange {
	c := RuleChange{Kind: ChangeAdded, RuleID: r.ID, New: &r}
	c.Impact, c.Why = captures(r.Effect, def)
	return c
}

// captures is what a rule that now matches calls it did not match before
// does to them: they were decided by a rule of a later effect class, by a
// later rule of its own effect, or by the default.
func captures(e api.Effect, def api.Effect) (Impact, string) {
	switch {
	case e == api.EffectDeny:
		return ImpactTightens, "the calls it matches are denied"
	case e == api.EffectAsk && def == api.EffectDeny:
		return ImpactLoosens, "calls it matches that no rule decided were denied by the default; now they ask"
	case e == api.EffectAsk:
		return ImpactTightens, "the calls it matches that no deny rule takes ask a person"
	case def == api.EffectAllow:
		return ImpactNeutral, "the calls it matches were allowed by the default already"
	}
	return ImpactLoosens, fmt.Sprintf("calls it matches that no deny or ask rule takes are allowed (the default %s them before)", verb(def))
}

// releases is what a rule that no longer matches calls it matched does to
// them: they fall to the rules after it, or to the default.
func releases(e api.Effect, def api.Effect) (Impact, string) {
	switch {
	case e == api.EffectDeny && def == api.EffectDeny:
		return ImpactMayLoosen, "calls it denied fall to the ask and allow rules, then the default (deny)"
	case e == api.EffectDeny:
		return ImpactLoosens, fmt.Sprintf("calls it denied fall to the ask and allow rules, then the default (%s)", def)
	case e == api.EffectAsk && def == api.EffectAllow:
		return ImpactLoosens, "calls it asked about fall to the allow rules, then the default (allow)"
	case e == api.EffectAsk:
		return ImpactMayLoosen, fmt.Sprintf("calls it asked about fall to the allow rules, then the default (%s)", def)
	case def == api.EffectAllow:
		return ImpactNeutral, "calls it allowed are allowed by the default"
	}
	return ImpactTightens, fmt.Sprintf("calls it allowed fall to the later allow rules, then the default (%s)", def)
}

func verb(e api.Effect) string {
	return map[api.Effect]string{api.EffectDeny: "denied", api.EffectAsk: "asked about", api.EffectAllow: "allowed"}[e]
}

func removed(r RuleDoc, def api.Effect) RuleChange {
	c := RuleChange{Kind: ChangeRemoved, RuleID: r.ID, Old: &r}
	c.Impact, c.Why = releases(r.Effect, def)
	return c
}

// precedence finds rules of one effect, in both documents, whose order
// changed where both may decide the same tool: the one now first decides
// the calls both match (its rule id and reason_code are recorded).
func precedence(old, new []RuleDoc) []RuleChange {
	pos := map[string]int{}
	for i, r := range old {
		pos[r.ID] = i
	}
	oldRules := byID(old)
	var out []RuleChange
	for i, a := range new {
		for _, b := range new[i+1:] {
			pa, okA := pos[a.ID]
			pb, okB := pos[b.ID]
			if !okA || !okB || pa < pb || a.Effect != b.Effect || oldRules[a.ID].Effect != oldRules[b.ID].Effect ||
				toolRelation(a.Tool, b.Tool) == relUnknown {
				continue
			}
			out = append(out, RuleChange{Kind: ChangePrecedence, RuleID: a.ID, Over: b.ID, Impact: ImpactNeutral,
				Why: fmt.Sprintf("%s now comes before %s: calls both match are decided by %s (its reason_code, message and approval_timeout)", a.ID, b.ID, a.ID)})
		}
	}
	return out
}

func schemaChanges(old, new map[string]json.RawMessage) []RuleChange {
	var out []RuleChange
	for _, tool := range slices.Sorted(maps.Keys(new)) {
		o, ok := old[tool]
		switch {
		case !ok:
			out = append(out, RuleChange{Kind: ChangeSchema, Tool: tool, Fields: []string{"added"}, Impact: ImpactTightens,
				Why: "input that fails it is denied schema_invalid (it replaces the schema the tool's MCP server publishes, if any)"})
		case canonical(o) != canonical(new[tool]):
			out = append(out, RuleChange{Kind: ChangeSchema, Tool: tool, Fields: []string{"changed"}, Impact: ImpactMayLoosen,
				Why: "input it refused may now pass to the rules"})
		}
	}
	for _, tool := range slices.Sorted(maps.Keys(old)) {
		if _, ok := new[tool]; !ok {
			out = append(out, RuleChange{Kind: ChangeSchema, Tool: tool, Fields: []string{"removed"}, Impact: ImpactLoosens,
				Why: "input it refused passes to the rules (or to the schema the tool's MCP server publishes)"})
		}
	}
	return out
}
