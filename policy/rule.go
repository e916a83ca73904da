package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/clip"
	"github.com/toolgate/toolgate/policy/bash"
)

// rule is a compiled rule.
type rule struct {
	id         string
	pos        int // place in the file
	effect     api.Effect
	tool       string
	glob       toolGlob
	reasonCode string
	message    string
	timeout    time.Duration // approval_timeout; 0 for the run's
	conds      []*condition  // sorted by key, so that explanations are stable
}

// condition is every operator on one input key; all must hold.
type condition struct {
	key      string // gjson path into the tool input
	pathKey  bool   // the key names a file system path: compare normalized
	ops      []operator
	describe string
}

// operator is one test of a value. match must treat a value it cannot
// decide according to the rule's effect: as a match for deny and ask, as a
// miss for allow.
type operator interface {
	match(v gjson.Result, ev *evalCtx) bool
}

// missExplainer is an operator that can say why it missed, for explain.
type missExplainer interface {
	explainMiss(v gjson.Result, ev *evalCtx) string
}

// matchExplainer is an operator that can say what made it match.
type matchExplainer interface {
	explainMatch(v gjson.Result, ev *evalCtx) string
}

// evalCtx carries what one evaluation computes once and shares between rules.
type evalCtx struct {
	call    Call
	input   string // call.Input as a string, for gjson
	scripts map[string]*bash.Script
	paths   map[string]string // normalized paths
	real    map[string]string // normalized paths with their links resolved
	values  []keyValue        // input values looked up so far
	// allowing says the rule being matched allows: its path conditions
	// must hold for the path as written and for the path its links lead
	// to. Any other rule's hold for either.
	allowing bool
}

type keyValue struct {
	key string
	val gjson.Result
}

// get looks a gjson path up in the input, once per evaluation.
func (ev *evalCtx) get(key string) gjson.Result {
	for _, kv := range ev.values {
		if kv.key == key {
			return kv.val
		}
	}
	v := gjson.Get(ev.input, key)
	ev.values = append(ev.values, keyValue{key, v})
	return v
}

// normalizeRule normalizes a path a rule names: relative to the session's
// project, not to where the call runs.
func (ev *evalCtx) normalizeRule(p string) string {
	if ev.call.Project == "" || ev.call.Project == ev.call.Cwd {
		return ev.normalize(p)
	}
	c := ev.call
	c.Cwd = c.Project
	return normalizePath(p, c)
}

// normalize is normalizePath for a path of the call's input, computed once
// per path and evaluation.
func (ev *evalCtx) normalize(p string) string {
	if n, ok := ev.paths[p]; ok {
		return n
	}
	if ev.paths == nil {
		ev.paths = map[string]string{}
	}
	n := normalizePath(p, ev.call)
	ev.paths[p] = n
	return n
}

// resolved is where p leads as the kernel resolves it: its links resolved
// as far as they exist, each before the components after it (physical),
// so that link/.. is the parent of the link's target.
func (ev *evalCtx) resolved(p string) string {
	if r, ok := ev.real[p]; ok {
		return r
	}
	if ev.real == nil {
		ev.real = map[string]string{}
	}
	r := ev.normalize(p)
	if raw := rawPath(p, ev.call); strings.HasPrefix(raw, "/") {
		r = bash.Physical(raw)
	}
	ev.real[p] = r
	return r
}

// pathHolds applies test to path p as written and as its links lead: for
// an allow, both must hold (a link in the project to $HOME must not make
// proj/d/x a project file); for a deny or an ask, either.
func (ev *evalCtx) pathHolds(p string, test func(normalized string) bool) bool {
	lexical := test(ev.normalize(p))
	real := ev.resolved(p)
	if real == ev.normalize(p) {
		return lexical
	}
	if ev.allowing {
		return lexical && test(real)
	}
	return lexical || test(real)
}

func (r *rule) match(ev *evalCtx, explain bool) (bool, string) {
	ev.allowing = r.effect == api.EffectAllow
	var notes []string
	for _, c := range r.conds {
		v := ev.get(c.key)
		for _, op := range c.ops {
			if op.match(v, ev) {
				if me, ok := op.(matchExplainer); ok && explain {
					if note := me.explainMatch(v, ev); note != "" {
						notes = append(notes, fmt.Sprintf("input.%s: %s", c.key, note))
					}
				}
				continue
			}
			if !explain {
				return false, ""
			}
			return false, c.missed(v, op, ev)
		}
	}
	if !explain {
		return true, ""
	}
	if len(r.conds) == 0 {
		return true, "tool matches and the rule has no input conditions"
	}
	if len(notes) > 0 {
		return true, "tool and every input condition match; " + strings.Join(notes, "; ")
	}
	return true, "tool and every input condition match"
}

// missed says why an operator of the condition did not hold.
func (c *condition) missed(v gjson.Result, op operator, ev *evalCtx) string {
	if !v.Exists() {
		return fmt.Sprintf("input.%s is missing (wanted %s)", c.key, c.describe)
	}
	if me, ok := op.(missExplainer); ok {
		if why := me.explainMiss(v, ev); why != "" {
			return fmt.Sprintf("input.%s: %s", c.key, why)
		}
	}
	return fmt.Sprintf("input.%s = %s does not satisfy %s", c.key, clip.String(v.Raw, 80), c.describe)
}

func (l *loader) compileRules(docs []RuleDoc) []*rule {
	seen := map[string]int{}
	var rules []*rule
	for i, d := range docs {
		ptr := fmt.Sprintf("/rules/%d", i)
		if l.reported(ptr) {
			continue
		}
		if j, dup := seen[d.ID]; dup {
			l.add(ptr+"/id", d.ID, fmt.Sprintf("duplicate rule id (first used by rule %d)", j+1))
			continue
		}
		seen[d.ID] = i
		r := &rule{id: d.ID, effect: d.Effect, tool: d.Tool, reasonCode: d.ReasonCode, message: d.Message}
		if d.ApprovalTimeout != "" {
			timeout, err := time.ParseDuration(d.ApprovalTimeout)
			if err != nil || timeout <= 0 {
				l.add(ptr+"/approval_timeout", d.ID, fmt.Sprintf("approval_timeout %q is not a positive duration", d.ApprovalTimeout))
				continue
			}
			r.timeout = timeout
		}
		keys := make([]string, 0, len(d.Input))
		for k := range d.Input {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			c, err := compileCondition(k, d.Input[k], d.Effect, l.lists)
			if err != nil {
				l.add(ptr+"/input/"+escapePointer(k), d.ID, fmt.Sprintf("input %q: %v", k, err))
				continue
			}
			r.conds = append(r.conds, c)
		}
		rules = append(rules, r)
	}
	return rules
}

func compileCondition(key string, d ConditionDoc, effect api.Effect, lists map[string][]string) (*condition, error) {
	if key == "" {
		return nil, fmt.Errorf("empty input key")
	}
	c := &condition{key: key, pathKey: isPathKey(key)}
	var desc []string
	if d.Const != nil {
		op, err := newEqual([]json.RawMessage{d.Const}, c.pathKey)
		if err != nil {
			return nil, fmt.Errorf("const: %w", err)
		}
		c.ops = append(c.ops, op)
		desc = append(desc, "const "+string(d.Const))
	}
	if d.Enum != nil {
		op, err := newEqual(d.Enum, c.pathKey)
		if err != nil {
			return nil, fmt.Errorf("enum: %w", err)
		}
		c.ops = append(c.ops, op)
		desc = append(desc, describeEnum(d.Enum))
	}
	if d.Prefix != nil {
		c.ops = append(c.ops, prefixOp{*d.Prefix, c.pathKey})
		desc = append(desc, fmt.Sprintf("prefix %q", *d.Prefix))
	}
	if d.Pattern != nil {
		re, err := regexp.Compile(`^(?:` + *d.Pattern + `)$`)
		if err != nil {
			return nil, fmt.Errorf("pattern does not compile (RE2 syntax): %v", err)
		}
		c.ops = append(c.ops, patternOp{re, c.pathKey})
		desc = append(desc, fmt.Sprintf("pattern %q", *d.Pattern))
	}
	if d.PathUnder != nil {
		c.ops = append(c.ops, newPathUnder(*d.PathUnder))
		desc = append(desc, fmt.Sprintf("path_under %q", *d.PathUnder))
	}
	if d.PathIn != nil {
		entries, err := listNamed(lists, *d.PathIn)
		if err != nil {
			return nil, fmt.Errorf("path_in: %w", err)
		}
		c.ops = append(c.ops, pathInOp{name: *d.PathIn, entries: entries})
		desc = append(desc, fmt.Sprintf("path_in %q", *d.PathIn))
	}
	if d.ArgumentIn != nil {
		entries, err := listNamed(lists, *d.ArgumentIn)
		if err != nil {
			return nil, fmt.Errorf("argument_in: %w", err)
		}
		c.ops = append(c.ops, argumentUnderOp{dirs: entries, effect: effect})
		desc = append(desc, fmt.Sprintf("argument_in %q", *d.ArgumentIn))
	}
	desc = c.shellOps(d, effect, desc)
	if len(c.ops) == 0 {
		return nil, fmt.Errorf("condition has no operator")
	}
	c.describe = strings.Join(desc, " and ")
	return c, nil
}

// describeEnum is "enum [\"main\",\"master\"]", or "enum of 12 values"
// when the list is long.
func describeEnum(values []json.RawMessage) string {
	parts := make([]string, len(values))
	n := 0
	for i, v := range values {
		var b bytes.Buffer
		if json.Compact(&b, v) != nil {
			b.Write(v)
		}
		parts[i] = b.String()
		n += len(parts[i]) + 1
	}
	if n > 80 {
		return fmt.Sprintf("enum of %d values", len(values))
	}
	return "enum [" + strings.Join(parts, ",") + "]"
}

// shellOps adds the operators that read a shell command line.
func (c *condition) shellOps(d ConditionDoc, effect api.Effect, desc []string) []string {
	if d.Command != nil {
		c.ops = append(c.ops, commandOp{prefixes: newPrefixes(d.Command), effect: effect})
		desc = append(desc, fmt.Sprintf("command %s", describePrefixes(d.Command)))
	}
	if d.ArgumentUnder != nil {
		c.ops = append(c.ops, argumentUnderOp{dirs: d.ArgumentUnder, effect: effect})
		desc = append(desc, fmt.Sprintf("argument_under [%s]", strings.Join(d.ArgumentUnder, " | ")))
	}
	if d.ArgumentOutside != nil {
		op := argumentOutsideOp{entries: d.ArgumentOutside, effect: effect}
		if d.Command != nil {
			op.of = newPrefixes(d.Command)
		}
		c.ops = append(c.ops, op)
		desc = append(desc, fmt.Sprintf("argument_outside [%s]", strings.Join(d.ArgumentOutside, " | ")))
	}
	return desc
}

func describePrefixes(prefixes [][]string) string {
	parts := make([]string, len(prefixes))
	for i, p := range prefixes {
		parts[i] = strings.Join(p, " ")
	}
	return "[" + strings.Join(parts, " | ") + "]"
}

// isPathKey reports whether an input key names a file system path, by the
// convention of Claude Code's tools: "path" or anything ending in "_path"
// (file_path, notebook_path).
func isPathKey(key string) bool {
	last := key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		last = key[i+1:]
	}
	return last == "path" || strings.HasSuffix(last, "_path")
}

// script parses a command line once per evaluation.
func (ev *evalCtx) script(src string) *bash.Script {
	if s, ok := ev.scripts[src]; ok {
		return s
	}
	if ev.scripts == nil {
		ev.scripts = map[string]*bash.Script{}
	}
	s := bash.Parse(src, ev.call.Cwd, ev.call.Home)
	ev.scripts[src] = s
	return s
}
