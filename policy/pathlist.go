package policy

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/policy/bash"
)

// A path list names paths once for every rule that needs them: the
// document's "paths" maps a name to entries, and path_in (for a tool's
// path) and argument_in (for the paths a shell command line names) match
// against all of them, so that the Read rules and the Bash rules of a
// policy protect the same secrets.
//
// An entry is a path, or a pattern whose components may hold *, ? and
// [...] as in a shell glob, and ** as a whole component for any number of
// directories: "/**/.env.*" is every .env.something anywhere. Like a path,
// an entry names what it matches and everything inside it, and a relative
// entry resolves against the session's project. An entry that starts with
// ! takes what it names out of the list again ("!/**/.env.example"), as
// in a .gitignore; a glob on a command line is read without them.

// checkEntry says what is wrong with an entry, or "".
func checkEntry(e string) string {
	e = strings.TrimPrefix(e, "!")
	if e == "" {
		return "an entry is empty"
	}
	for _, part := range strings.Split(e, "/") {
		if strings.Contains(part, "**") && part != "**" {
			return fmt.Sprintf("entry %q: ** must be a whole component (a/**/b)", e)
		}
		if _, err := path.Match(part, ""); err != nil {
			return fmt.Sprintf("entry %q: component %q is not a valid pattern", e, part)
		}
	}
	return ""
}

// entryUnder reports whether the normalized path p is what the normalized
// entry names, or inside it.
func entryUnder(p, entry string) bool {
	if !bash.HasGlob(entry) {
		return pathUnder(p, entry)
	}
	return partsUnder(splitPath(p), splitPath(entry), false, false)
}

// globEntryMeet reports whether a normalized glob of a command line may
// expand to a path an entry names (in any case, as the deny side reads
// globs): some name both may match. Without dotglob, a glob component that
// starts with a wildcard matches no name that starts with a dot.
func globEntryMeet(pattern, entry string, dotglob bool) bool {
	return partsUnder(splitPath(strings.ToLower(pattern)), splitPath(strings.ToLower(entry)), true, dotglob)
}

func splitPath(p string) []string {
	if p == "/" {
		return []string{""}
	}
	return strings.Split(p, "/")
}

// partsUnder matches path components against an entry's: the path may go
// on past the entry (it is inside). With meet, the path's components are
// patterns too, and a component matches when some name matches both.
func partsUnder(ps, es []string, meet, dotglob bool) bool {
	if len(es) == 0 {
		return true
	}
	if es[0] == "**" {
		for i := 0; i <= len(ps); i++ {
			if partsUnder(ps[i:], es[1:], meet, dotglob) {
				return true
			}
		}
		return false
	}
	if len(ps) == 0 {
		return false
	}
	if meet && ps[0] == "**" {
		// The glob's ** may be any number of the entry's components.
		for j := 0; j <= len(es); j++ {
			if partsUnder(ps[1:], es[j:], meet, dotglob) {
				return true
			}
		}
		return false
	}
	var ok bool
	if meet {
		ok = globsMeet(ps[0], es[0]) && (dotglob || !hiddenOnly(ps[0], es[0]))
	} else {
		ok, _ = path.Match(es[0], ps[0])
	}
	return ok && partsUnder(ps[1:], es[1:], meet, dotglob)
}

// hiddenOnly reports whether an entry's component names only dot files
// while the glob's starts with a wildcard, which bash does not let match a
// leading dot without dotglob.
func hiddenOnly(glob, entry string) bool {
	return strings.HasPrefix(entry, ".") && glob != "" && strings.ContainsRune("*?[", rune(glob[0]))
}

// globToken is one element of a glob component: a literal character, any
// one character (? and every bracket class, read widely), or *.
type globToken struct {
	r    rune
	one  bool
	star bool
}

func globTokens(s string) []globToken {
	var out []globToken
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '*':
			out = append(out, globToken{star: true})
		case '?':
			out = append(out, globToken{one: true})
		case '[':
			j := i + 1
			if j < len(rs) && (rs[j] == '!' || rs[j] == '^') {
				j++
			}
			if j < len(rs) && rs[j] == ']' {
				j++
			}
			for j < len(rs) && rs[j] != ']' {
				j++
			}
			if j == len(rs) { // no closing bracket: a literal [
				out = append(out, globToken{r: '['})
				continue
			}
			out = append(out, globToken{one: true})
			i = j
		case '\\':
			if i+1 < len(rs) {
				i++
			}
			out = append(out, globToken{r: rs[i]})
		default:
			out = append(out, globToken{r: rs[i]})
		}
	}
	return out
}

// globsMeet reports whether two glob components match some name in
// common.
func globsMeet(a, b string) bool {
	ta, tb := globTokens(a), globTokens(b)
	memo := make(map[[2]int]bool)
	var meet func(i, j int) bool
	meet = func(i, j int) bool {
		key := [2]int{i, j}
		if v, ok := memo[key]; ok {
			return v
		}
		var v bool
		switch {
		case i == len(ta) && j == len(tb):
			v = true
		case i < len(ta) && ta[i].star:
			v = meet(i+1, j) || j < len(tb) && meet(i, j+1)
		case j < len(tb) && tb[j].star:
			v = meet(i, j+1) || i < len(ta) && meet(i+1, j)
		case i < len(ta) && j < len(tb):
			v = (ta[i].one || tb[j].one || ta[i].r == tb[j].r) && meet(i+1, j+1)
		}
		memo[key] = v
		return v
	}
	return meet(0, 0)
}

// pathInOp matches a path that, normalized, is under an entry of a path
// list, as written and as its links lead (ev.pathHolds).
type pathInOp struct {
	name    string
	entries []string
}

func (op pathInOp) match(v gjson.Result, ev *evalCtx) bool {
	if v.Type != gjson.String || v.Str == "" {
		return false
	}
	entries := ev.normalizeEntries(op.entries)
	return ev.pathHolds(v.Str, func(p string) bool { return inList(p, entries, !ev.allowing) >= 0 })
}

// normalizeEntries normalizes a list's entries as paths a rule names,
// keeping the ! of an exclusion.
func (ev *evalCtx) normalizeEntries(entries []string) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		if rest, ok := strings.CutPrefix(e, "!"); ok {
			out[i] = "!" + ev.normalizeRule(rest)
			continue
		}
		out[i] = ev.normalizeRule(e)
	}
	return out
}

// inList is the index of the entry that puts the normalized path p in the
// list of normalized entries, or -1: an entry names p, and no exclusion
// does. With fold, names compare in any case, as the deny side reads them:
// on a case-insensitive file system (macOS, a FAT or NTFS mount, ext4's
// casefold) .ENV.production is .env.production.
func inList(p string, entries []string, fold bool) int {
	if fold {
		p = strings.ToLower(p)
	}
	found := -1
	for i, e := range entries {
		if fold {
			e = strings.ToLower(e)
		}
		if rest, ok := strings.CutPrefix(e, "!"); ok {
			if entryUnder(p, rest) {
				return -1
			}
			continue
		}
		if found < 0 && entryUnder(p, e) {
			found = i
		}
	}
	return found
}

// checkLists reports the entries of the document's path lists that are
// not paths or patterns, and returns the lists.
func (l *loader) checkLists(lists map[string][]string) map[string][]string {
	for name, entries := range lists {
		for i, e := range entries {
			if msg := checkEntry(e); msg != "" {
				l.add(fmt.Sprintf("/paths/%s/%d", escapePointer(name), i), "", "path list "+name+": "+msg)
			}
		}
	}
	return lists
}

// listNamed is the path list of that name, or an error that names the
// lists there are.
func listNamed(lists map[string][]string, name string) ([]string, error) {
	if entries, ok := lists[name]; ok {
		return entries, nil
	}
	names := make([]string, 0, len(lists))
	for n := range lists {
		names = append(names, strconv.Quote(n))
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("no path list %q: the document's \"paths\" defines none", name)
	}
	return nil, fmt.Errorf("no path list %q in the document's \"paths\" (it has %s)", name, strings.Join(names, ", "))
}

// argumentOutsideOp matches a shell command line in which some program
// gets a path that is not under any of the entries (argument_outside):
// with ["./*"], a path that is not inside the project, the project itself
// included. Words are read as argument_under reads them; a word only known
// at run time, a glob that may reach outside, or a script the matcher
// cannot see counts as a match for deny and ask and as a miss for allow.
//
// Beside a command condition in the same condition, it reads only the
// arguments of the programs the command's prefixes catch: rm -rf build &&
// ls /tmp deletes nothing outside.
type argumentOutsideOp struct {
	entries []string // as written
	effect  api.Effect
	of      []prefix // the programs whose arguments count; nil: every program's
}

func (op argumentOutsideOp) match(v gjson.Result, ev *evalCtx) bool {
	return op.find(v, ev) != ""
}

func (op argumentOutsideOp) explainMatch(v gjson.Result, ev *evalCtx) string {
	return op.find(v, ev)
}

// find returns the first word naming a path outside the entries, or "".
func (op argumentOutsideOp) find(v gjson.Result, ev *evalCtx) string {
	if v.Type != gjson.String {
		return ""
	}
	s := ev.script(v.Str)
	deny := op.effect != api.EffectAllow
	if s.Unknown != "" {
		if deny {
			return "the script may run what the matcher cannot see: " + s.Unknown
		}
		return ""
	}
	entries := ev.normalizeEntries(op.entries)
	inside := func(p string) bool { return inList(p, entries, false) >= 0 }
	words, runTime := s.PathWords(), runTimeArguments(s)
	if op.of != nil {
		words, runTime = op.arguments(s, ev)
	}
	for _, w := range words {
		switch {
		case w.Glob && deny:
			lit := w
			lit.Known = true
			got, ok := s.GlobLeads(lit, ev.call.Cwd, ev.call.Home)
			if !ok {
				return fmt.Sprintf("glob %s may match anything", w.Raw)
			}
			for _, p := range got {
				if !globWithin(p, entries) {
					return fmt.Sprintf("glob %s may match a path outside %s", w.Raw, strings.Join(op.entries, ", "))
				}
			}
		case !w.Known:
			if deny {
				return fmt.Sprintf("word %s is only known at run time", w.Raw)
			}
		default:
			where := s.Paths
			if deny {
				where = s.Leads
			}
			got, ok := where(w, ev.call.Cwd, ev.call.Home, false)
			if !ok {
				if deny {
					return fmt.Sprintf("%s may point anywhere: the script changes directory or root in a way the matcher cannot follow", w.Raw)
				}
				continue
			}
			for _, p := range got {
				if !inside(p) {
					return fmt.Sprintf("%s is %s, outside %s", w.Raw, p, strings.Join(op.entries, ", "))
				}
			}
		}
	}
	if deny {
		return runTime
	}
	return ""
}

// arguments are the words of the programs the op's prefixes catch, and
// why one of them gets arguments only known at run time ("" if none).
func (op argumentOutsideOp) arguments(s *bash.Script, ev *evalCtx) ([]bash.Word, string) {
	m := matcher{ev: ev, s: s, deny: true}
	var words []bash.Word
	runTime := ""
	for _, cmd := range s.Commands {
		for _, c := range cmd.Cands {
			if len(c.Argv) == 0 || !m.any(op.of, c.Argv) {
				continue
			}
			for _, w := range c.Argv[1:] {
				if !w.FD {
					words = append(words, w)
				}
			}
			if c.StdinArgs && runTime == "" {
				runTime = fmt.Sprintf("`%s` gets more arguments from standard input", argvText(c.Argv))
			}
		}
	}
	return words, runTime
}

// runTimeArguments says which program of the script gets arguments only
// known when it runs (xargs's from standard input, find -exec's {}), or "".
func runTimeArguments(s *bash.Script) string {
	for _, cmd := range s.Commands {
		for _, c := range cmd.Cands {
			if c.StdinArgs {
				return fmt.Sprintf("`%s` gets more arguments from standard input", argvText(c.Argv))
			}
			for _, w := range c.Argv {
				if !w.Known && !w.Glob && !w.FD {
					return fmt.Sprintf("`%s` gets %s, only known at run time", argvText(c.Argv), w.Raw)
				}
			}
		}
	}
	return ""
}

// globWithin reports whether every path a normalized glob may match is
// under one of the entries: component by component, an entry's * holds
// any name, its ** any number of them, and its other components only the
// same literal name.
func globWithin(pattern string, entries []string) bool {
	ps := splitPath(pattern)
	for _, e := range entries {
		if strings.HasPrefix(e, "!") {
			return false // what an exclusion takes out, a glob may reach
		}
	}
	for _, e := range entries {
		if partsWithin(ps, splitPath(e)) {
			return true
		}
	}
	return false
}

func partsWithin(ps, es []string) bool {
	if len(es) == 0 {
		return true
	}
	if es[0] == "**" {
		for i := 0; i <= len(ps); i++ {
			if partsWithin(ps[i:], es[1:]) {
				return true
			}
		}
		return false
	}
	if len(ps) == 0 || ps[0] == "**" {
		return false
	}
	switch {
	case es[0] == "*":
	case bash.HasGlob(ps[0]):
		return false
	default:
		if ok, _ := path.Match(es[0], ps[0]); !ok {
			return false
		}
	}
	return partsWithin(ps[1:], es[1:])
}
