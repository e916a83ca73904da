package policy

import (
	"cmp"
	"slices"

	"github.com/toolgate/toolgate/api"
)

// HistoryReport is what a replay of recorded calls found: how many calls
// it decided, and the calls whose effect the new policy changes, grouped
// by change (allow to deny, ask to allow ...), the loosening changes
// first.
type HistoryReport struct {
	Calls     int `json:"calls"`     // recorded calls replayed
	Changed   int `json:"changed"`   // whose effect changes
	Loosened  int `json:"loosened"`  // ... to a looser one
	Tightened int `json:"tightened"` // ... to a stricter one
	// OtherRule counts calls whose effect stays but which another rule
	// (or another reason_code) decides.
	OtherRule int `json:"other_rule"`
	// WithoutSession counts calls replayed without what the gate knew of
	// their session (its working directory, home and MCP servers' tool
	// schemas): the session was not in the source.
	WithoutSession int           `json:"without_session"`
	Changes        []ChangeGroup `json:"changes"`
}

// ChangeGroup is every replayed call whose effect changes from From to To.
type ChangeGroup struct {
	From    api.Effect    `json:"from"`
	To      api.Effect    `json:"to"`
	Loosens bool          `json:"loosens"`
	Count   int           `json:"count"`
	Rules   []RuleCount   `json:"rules"` // the calls by the rules that decide them, the most first
	Calls   []ChangedCall `json:"calls"` // in the order they were proposed
}

// RuleCount is how many calls of a change the old policy decided by one
// rule and the new policy by another (null: the default decided).
type RuleCount struct {
	Old   *string `json:"old_rule"`
	New   *string `json:"new_rule"`
	Count int     `json:"count"`
}

// String is "ask-pr-main -> default".
func (rc RuleCount) String() string { return ruleName(rc.Old) + " -> " + ruleName(rc.New) }

// sameRule reports whether two rule ids (nil: the default) are the same.
func sameRule(a, b *string) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// ruleName is a rule id for a person: the id, or "default".
func ruleName(id *string) string {
	if id == nil {
		return "default"
	}
	return *id
}

func (r *Replayer) group(from, to api.Effect) *ChangeGroup {
	key := [2]api.Effect{from, to}
	g, ok := r.groups[key]
	if !ok {
		g = &ChangeGroup{From: from, To: to, Loosens: Looser(from, to)}
		r.groups[key] = g
	}
	return g
}

func (g *ChangeGroup) count(old, new Outcome) {
	g.Count++
	for i := range g.Rules {
		if sameRule(g.Rules[i].Old, old.RuleID) && sameRule(g.Rules[i].New, new.RuleID) {
			g.Rules[i].Count++
			return
		}
	}
	g.Rules = append(g.Rules, RuleCount{Old: old.RuleID, New: new.RuleID, Count: 1})
}

// Report returns what the replay found so far, the groups in order: the
// loosening changes first, those ending in allow first of all; then the
// tightening ones, those ending in deny first.
func (r *Replayer) Report() HistoryReport {
	rep := r.report
	rep.Changes = []ChangeGroup{}
	for _, g := range r.groups {
		g := *g
		slices.SortFunc(g.Rules, func(a, b RuleCount) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.String(), b.String()))
		})
		slices.SortStableFunc(g.Calls, func(a, b ChangedCall) int {
			return cmp.Or(a.ProposedAt.Compare(b.ProposedAt), cmp.Compare(a.ToolUseID, b.ToolUseID))
		})
		rep.Changed += g.Count
		if g.Loosens {
			rep.Loosened += g.Count
		} else {
			rep.Tightened += g.Count
		}
		rep.Changes = append(rep.Changes, g)
	}
	slices.SortFunc(rep.Changes, func(a, b ChangeGroup) int { return cmp.Compare(severity(a), severity(b)) })
	return rep
}

// severity orders the changes for a reviewer: deny to allow, ask to allow,
// deny to ask; then allow to deny, ask to deny, allow to ask.
func severity(g ChangeGroup) int {
	order := [][2]api.Effect{{api.EffectDeny, api.EffectAllow}, {api.EffectAsk, api.EffectAllow}, {api.EffectDeny, api.EffectAsk},
		{api.EffectAllow, api.EffectDeny}, {api.EffectAsk, api.EffectDeny}, {api.EffectAllow, api.EffectAsk}}
	if i := slices.Index(order, [2]api.Effect{g.From, g.To}); i >= 0 {
		return i
	}
	return len(order)
}
