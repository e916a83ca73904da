package policy

import (
	"fmt"
	"maps"
	"slices"

	"github.com/toolgate/toolgate/api"
)

// modified is the change of a rule both documents have: what differs, and
// what it can do to decisions, from its effect and from how what it
// matches changed (matchRelation).
func modified(old, new RuleDoc, def api.Effect) RuleChange {
	c := RuleChange{Kind: ChangeModified, RuleID: new.ID, Old: &old, New: &new, Fields: changedFields(old, new)}
	rel := matchRelation(old, new)
	switch {
	case old.Effect != new.Effect && Looser(old.Effect, new.Effect):
		c.Impact, c.Why = ImpactLoosens, fmt.Sprintf("its effect is %s instead of %s", new.Effect, old.Effect)
	case old.Effect != new.Effect && rel != relSame:
		c.Impact, c.Why = ImpactMayLoosen, fmt.Sprintf("its effect is %s instead of %s, and it matches %s", new.Effect, old.Effect, rel)
	case old.Effect != new.Effect:
		c.Impact, c.Why = ImpactTightens, fmt.Sprintf("its effect is %s instead of %s", new.Effect, old.Effect)
	case rel == relSame:
		c.Impact, c.Why = ImpactNeutral, "it matches the same calls with the same effect"
	default:
		c.Impact, c.Why = matchChange(new.Effect, rel, def)
	}
	return c
}

// matchChange is what a rule of effect e that now matches more, fewer or
// other calls does to decisions.
func matchChange(e api.Effect, rel relation, def api.Effect) (Impact, string) {
	var impact Impact
	var why string
	switch rel {
	case relWider:
		impact, why = captures(e, def)
	case relNarrower:
		impact, why = releases(e, def)
	default:
		gained, _ := captures(e, def)
		lost, _ := releases(e, def)
		impact, why = ImpactNeutral, "what it matches changed, in ways that change no effect"
		if gained.CanLoosen() || lost.CanLoosen() {
			impact, why = ImpactMayLoosen, "what it matches changed in ways the documents cannot compare"
		} else if gained == ImpactTightens || lost == ImpactTightens {
			impact, why = ImpactTightens, "what it matches changed; calls can only get stricter decisions"
		}
		return impact, why
	}
	return impact, fmt.Sprintf("it matches %s: %s", rel, why)
}

// changedFields names what differs between two versions of a rule:
// effect, tool, input.KEY for each condition, and the other members.
func changedFields(old, new RuleDoc) []string {
	var out []string
	add := func(name string, a, b any) {
		if canonical(a) != canonical(b) {
			out = append(out, name)
		}
	}
	add("effect", old.Effect, new.Effect)
	add("tool", old.Tool, new.Tool)
	keys := slices.Sorted(maps.Keys(old.Input))
	for _, k := range slices.Sorted(maps.Keys(new.Input)) {
		if _, ok := old.Input[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		o, inOld := old.Input[k]
		n, inNew := new.Input[k]
		if inOld != inNew || canonical(o) != canonical(n) {
			out = append(out, "input."+k)
		}
	}
	add("reason_code", old.ReasonCode, new.ReasonCode)
	add("message", old.Message, new.Message)
	add("approval_timeout", old.ApprovalTimeout, new.ApprovalTimeout)
	add("description", old.Description, new.Description)
	return out
}
