package policy

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// relation is how what a rule matches changed between two versions of it:
// the same calls, more (wider), fewer (narrower), or neither can be told.
// It is only ever claimed when it holds for every call: whatever the
// comparison cannot prove is unknown.
type relation int

const (
	relSame relation = iota
	relWider
	relNarrower
	relUnknown
)

func (r relation) String() string {
	return [...]string{"the same calls", "more calls", "fewer calls", "other calls"}[r]
}

// and is the relation of a conjunction whose parts changed as a and b.
func (a relation) and(b relation) relation {
	switch {
	case a == relSame:
		return b
	case b == relSame || a == b:
		return a
	}
	return relUnknown
}

// matchRelation compares what two versions of a rule match: its tool
// pattern and each input condition (a condition added narrows it, one
// dropped widens it).
func matchRelation(old, new RuleDoc) relation {
	rel := toolRelation(old.Tool, new.Tool)
	for key, oc := range old.Input {
		nc, ok := new.Input[key]
		if !ok {
			rel = rel.and(relWider)
			continue
		}
		rel = rel.and(conditionRelation(oc, nc))
	}
	for key := range new.Input {
		if _, ok := old.Input[key]; !ok {
			rel = rel.and(relNarrower)
		}
	}
	return rel
}

// toolRelation compares tool patterns: a glob that matches the other
// pattern's text (its stars standing for themselves) matches every name
// the other does.
func toolRelation(old, new string) relation {
	switch {
	case old == new:
		return relSame
	case newToolGlob(new).match(old):
		return relWider
	case newToolGlob(old).match(new):
		return relNarrower
	}
	return relUnknown
}

// conditionRelation compares two conditions on one key. It can tell
// equal conditions, const/enum value sets, prefixes and command prefix
// lists apart; anything else is unknown.
func conditionRelation(old, new ConditionDoc) relation {
	if canonical(old) == canonical(new) {
		return relSame
	}
	if ov, ok := equalitySet(old); ok {
		if nv, ok := equalitySet(new); ok {
			return setRelation(ov, nv, jsonEqual)
		}
	}
	switch {
	case onlyPrefix(old) && onlyPrefix(new):
		return prefixRelation(*old.Prefix, *new.Prefix)
	case onlyCommand(old) && onlyCommand(new):
		return setRelation(toAny(old.Command), toAny(new.Command), func(a, b any) bool {
			return slices.Equal(a.([]string), b.([]string))
		})
	}
	return relUnknown
}

// equalitySet is the set of values a condition of const and enum only
// accepts (their intersection when it has both).
func equalitySet(c ConditionDoc) ([]any, bool) {
	if c.Prefix != nil || c.Pattern != nil || c.PathUnder != nil || c.Command != nil || c.ArgumentUnder != nil || c.ArgumentOutside != nil || c.PathIn != nil || c.ArgumentIn != nil || (c.Const == nil && c.Enum == nil) {
		return nil, false
	}
	var values []any
	for _, raw := range c.Enum {
		v, err := decodeJSON(raw)
		if err != nil {
			return nil, false
		}
		values = append(values, v)
	}
	if c.Const == nil {
		return values, true
	}
	v, err := decodeJSON(c.Const)
	if err != nil {
		return nil, false
	}
	if c.Enum != nil && !slices.ContainsFunc(values, func(x any) bool { return jsonEqual(x, v) }) {
		return nil, true // nothing satisfies both
	}
	return []any{v}, true
}

// setRelation compares the sets of values two conditions accept: a
// superset matches more calls.
func setRelation(old, new []any, eq func(a, b any) bool) relation {
	in := func(set []any, v any) bool { return slices.ContainsFunc(set, func(x any) bool { return eq(x, v) }) }
	subset := func(a, b []any) bool {
		for _, v := range a {
			if !in(b, v) {
				return false
			}
		}
		return true
	}
	switch oldInNew, newInOld := subset(old, new), subset(new, old); {
	case oldInNew && newInOld:
		return relSame
	case oldInNew:
		return relWider
	case newInOld:
		return relNarrower
	}
	return relUnknown
}

// prefixRelation: a longer prefix matches fewer strings.
func prefixRelation(old, new string) relation {
	switch {
	case old == new:
		return relSame
	case strings.HasPrefix(new, old):
		return relNarrower
	case strings.HasPrefix(old, new):
		return relWider
	}
	return relUnknown
}

func onlyPrefix(c ConditionDoc) bool {
	return c.Prefix != nil && c.Const == nil && c.Enum == nil && c.Pattern == nil && c.PathUnder == nil && c.Command == nil && c.PathIn == nil && c.ArgumentIn == nil && c.ArgumentUnder == nil && c.ArgumentOutside == nil
}

func onlyCommand(c ConditionDoc) bool {
	return c.Command != nil && c.Const == nil && c.Enum == nil && c.Pattern == nil && c.PathUnder == nil && c.Prefix == nil && c.PathIn == nil && c.ArgumentIn == nil && c.ArgumentUnder == nil && c.ArgumentOutside == nil
}

func toAny(prefixes [][]string) []any {
	out := make([]any, len(prefixes))
	for i, p := range prefixes {
		out[i] = p
	}
	return out
}

// canonical is v as compact JSON with object keys sorted, so that two
// documents that say the same thing compare equal however they are laid
// out.
func canonical(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if dec.Decode(&generic) != nil {
		return string(raw)
	}
	out, _ := json.Marshal(generic)
	return string(out)
}
