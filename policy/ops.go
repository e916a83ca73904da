package policy

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math/big"
	"path"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/policy/bash"
)

// equalOp is const (one value) or enum (several): strict JSON equality, as
// JSON Schema defines it (1 and 1.0 are equal, "1" and 1 are not). On a path
// key, two strings are equal when their normalized paths are.
type equalOp struct {
	values  []any
	pathKey bool
}

func newEqual(raws []json.RawMessage, pathKey bool) (equalOp, error) {
	op := equalOp{pathKey: pathKey}
	for _, raw := range raws {
		v, err := decodeJSON(raw)
		if err != nil {
			return op, err
		}
		op.values = append(op.values, v)
	}
	return op, nil
}

func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

func (op equalOp) match(v gjson.Result, ev *evalCtx) bool {
	if !v.Exists() {
		return false
	}
	if v.Type == gjson.String {
		for _, want := range op.values {
			s, ok := want.(string)
			if !ok {
				continue
			}
			if s == v.Str && !op.pathKey || op.pathKey && ev.pathHolds(v.Str, func(p string) bool { return ev.normalizeRule(s) == p }) {
				return true
			}
		}
		return false
	}
	got, err := decodeJSON([]byte(v.Raw))
	if err != nil {
		return false
	}
	for _, want := range op.values {
		if jsonEqual(got, want) {
			return true
		}
	}
	return false
}

func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		x, okx := new(big.Rat).SetString(a.String())
		y, oky := new(big.Rat).SetString(b.String())
		return okx && oky && x.Cmp(y) == 0
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !jsonEqual(a[i], b[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !jsonEqual(av, bv) {
				return false
			}
		}
		return true
	default: // string, bool, nil
		return a == b
	}
}

// prefixOp matches a string that starts with the prefix. On a path, a
// deny or an ask also matches the path its links lead to.
type prefixOp struct {
	prefix  string
	pathKey bool
}

func (op prefixOp) match(v gjson.Result, ev *evalCtx) bool {
	return v.Type == gjson.String && (strings.HasPrefix(v.Str, op.prefix) ||
		op.pathKey && !ev.allowing && strings.HasPrefix(ev.resolved(v.Str), op.prefix))
}

// patternOp matches a string that the anchored RE2 expression matches
// whole. On a path, a deny or an ask also matches the path its links lead
// to.
type patternOp struct {
	re      *regexp.Regexp
	pathKey bool
}

func (op patternOp) match(v gjson.Result, ev *evalCtx) bool {
	return v.Type == gjson.String && (op.re.MatchString(v.Str) ||
		op.pathKey && !ev.allowing && op.re.MatchString(ev.resolved(v.Str)))
}

// pathUnderOp matches a path that, normalized, is the directory or lies
// under it, as written and as its links lead (ev.pathHolds).
type pathUnderOp struct {
	dir string // as written
	rel string // the cleaned directory when it is relative to the working directory and stays inside it
}

func newPathUnder(dir string) pathUnderOp {
	op := pathUnderOp{dir: dir}
	if clean := path.Clean(dir); !strings.HasPrefix(dir, "/") && !strings.HasPrefix(dir, "~") &&
		clean != ".." && !strings.HasPrefix(clean, "../") {
		op.rel = clean
	}
	return op
}

func (op pathUnderOp) match(v gjson.Result, ev *evalCtx) bool {
	if v.Type != gjson.String || v.Str == "" {
		return false
	}
	return ev.pathHolds(v.Str, func(p string) bool { return op.under(p, ev) })
}

// under reports whether the normalized path p is under the directory.
func (op pathUnderOp) under(p string, ev *evalCtx) bool {
	if project := cmp.Or(ev.call.Project, ev.call.Cwd); op.rel != "" && project != "" {
		// The common case, a directory of the project: compare in place.
		cwd := path.Clean(project)
		if op.rel == "." {
			return pathUnder(p, cwd)
		}
		rest, ok := strings.CutPrefix(p, cwd)
		if cwd != "/" {
			rest, ok = strings.CutPrefix(rest, "/")
		}
		return ok && pathUnder(rest, op.rel)
	}
	return pathUnder(p, ev.normalizeRule(op.dir))
}

func pathUnder(p, dir string) bool {
	if p == dir || dir == "/" && strings.HasPrefix(p, "/") {
		return true
	}
	return strings.HasPrefix(p, dir+"/")
}

// rawPath is p with ~ expanded and joined to the call's working
// directory, not cleaned (for physical).
func rawPath(p string, c Call) string {
	switch {
	case p == "~" && c.Home != "":
		p = c.Home
	case strings.HasPrefix(p, "~/") && c.Home != "":
		p = c.Home + p[1:]
	}
	return bash.RawJoin(c.Cwd, p)
}

// normalizePath makes a path comparable: "~" and "~/..." expand to the
// call's home, a relative path resolves against the call's working
// directory, then ".", ".." and duplicate slashes are removed lexically.
// Without a working directory a relative path stays relative.
func normalizePath(p string, c Call) string {
	switch {
	case p == "~" && c.Home != "":
		p = c.Home
	case strings.HasPrefix(p, "~/") && c.Home != "":
		p = c.Home + p[1:]
	}
	if !strings.HasPrefix(p, "/") && c.Cwd != "" {
		p = c.Cwd + "/" + p
	}
	return path.Clean(p)
}
