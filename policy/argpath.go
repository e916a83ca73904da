package policy

import (
	"fmt"
	"path"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
)

// argumentUnderOp matches a shell command line in which some program gets
// a path under one of the directories: as an argument (cat ~/.ssh/id_rsa),
// the value of an --option=PATH or NAME=PATH word, or a redirection target
// (< .env). Paths are normalized like path_under's, against the session's
// working directory and every directory the script may cd to; ~ expands to
// the home directory.
//
// A word only known at run time, or a script that runs what the matcher
// cannot see, counts as a match for deny and ask and as a miss for allow.
// A glob counts when it may expand to such a path.
type argumentUnderOp struct {
	dirs   []string // as written
	effect api.Effect
}

func (op argumentUnderOp) match(v gjson.Result, ev *evalCtx) bool {
	return op.find(v, ev) != ""
}

// find returns what under the directories the script names, or "".
func (op argumentUnderOp) find(v gjson.Result, ev *evalCtx) string {
	if v.Type != gjson.String {
		return ""
	}
	s := ev.script(v.Str)
	deny := op.effect != api.EffectAllow
	switch {
	case s.unknown != "" && deny:
		return "the script may run what the matcher cannot see: " + s.unknown
	case s.unknown != "":
		return ""
	}
	dirs := ev.normalizeEntries(op.dirs)
	for _, w := range s.pathWords() {
		if found := op.word(s, w, dirs, ev, deny); found != "" {
			return found
		}
	}
	return ""
}

// pathWords is every word of the script a program may take as a path:
// not a process substitution's /dev/fd path, nor a word only known at run
// time that the builtins echo and printf print (echo $PATH: they open no
// argument; a function of either name is walked as its own commands).
// What they print may still become another program's arguments: a script
// that may do that (xargs, a redirection into a file) or may turn a
// builtin off (enable -n echo, then a program named echo runs) has every
// word counted, and a known path they print always counts.
func (s *script) pathWords() []word {
	printed := len(s.redirs) == 0
	for _, cmd := range s.commands {
		if len(cmd.argv) > 0 && (!cmd.argv[0].known || cmd.argv[0].s == "enable") {
			printed = false
		}
		for _, c := range cmd.cands {
			printed = printed && !c.stdinArgs
		}
	}
	var out []word
	for _, cmd := range s.commands {
		out = append(out, cmd.assigns...)
		onlyPrinted := printed && len(cmd.argv) > 0 && printsOnly[cmd.argv[0].s]
		for i, w := range cmd.argv {
			if w.fd || onlyPrinted && i > 0 && !w.known && !w.glob {
				continue
			}
			if i > 0 || !w.known || strings.Contains(w.s, "/") {
				out = append(out, w)
			}
		}
	}
	for _, w := range s.redirs {
		if !w.fd {
			out = append(out, w)
		}
	}
	return out
}

// printsOnly are the builtins that print their arguments and open none.
var printsOnly = map[string]bool{"echo": true, "printf": true}

// word checks one word: as a whole, and its value after = (--file=PATH).
func (op argumentUnderOp) word(s *script, w word, dirs []string, ev *evalCtx, deny bool) string {
	if !w.known {
		if w.glob {
			return op.glob(s, w, dirs, ev, deny)
		}
		if items, ok := s.loopValues(w); ok && deny {
			for _, item := range items {
				if found := op.word(s, item, dirs, ev, deny); found != "" {
					return found
				}
			}
			return ""
		}
		if deny {
			return fmt.Sprintf("word %s is only known at run time", w.raw)
		}
		return ""
	}
	for _, eq := range []bool{false, true} {
		if eq && !strings.Contains(w.s, "=") {
			break
		}
		got, ok := s.paths(w, ev.call.Cwd, ev.call.Home, eq)
		if !ok {
			if deny {
				return fmt.Sprintf("%s may point anywhere: the script changes directory or root in a way the matcher cannot follow", w.raw)
			}
			continue
		}
		if deny {
			got = append(got, s.physicalPaths(w, ev.call.Cwd, ev.call.Home, eq)...)
		}
		for _, p := range got {
			if i := inList(p, dirs); i >= 0 {
				return fmt.Sprintf("%s is %s, under %s", w.raw, p, op.dirs[i])
			}
		}
	}
	if !deny {
		return ""
	}
	if found := op.atValue(s, w, dirs, ev); found != "" {
		return found
	}
	return op.gluedValue(s, w, dirs, ev)
}

// atValue checks, on the deny side, a value that names a file after an @:
// curl -d @.env and -F f=@key send the file's contents, and other programs
// read @FILE as a list of arguments.
func (op argumentUnderOp) atValue(s *script, w word, dirs []string, ev *evalCtx) string {
	value := w.s
	if _, after, ok := strings.Cut(w.s, "="); ok && !strings.HasPrefix(value, "@") {
		value = after
	}
	rest, ok := strings.CutPrefix(value, "@")
	if !ok || rest == "" {
		return ""
	}
	file := w
	file.s, file.tilde = rest, false // no ~ expands after @
	got, ok := s.paths(file, ev.call.Cwd, ev.call.Home, false)
	if !ok {
		return fmt.Sprintf("%s may name a file anywhere", w.raw)
	}
	for _, p := range append(got, s.physicalPaths(file, ev.call.Cwd, ev.call.Home, false)...) {
		if i := inList(p, dirs); i >= 0 {
			return fmt.Sprintf("%s names %s, under %s", w.raw, p, op.dirs[i])
		}
	}
	return ""
}

// maxGlued bounds how many option letters may stand before a value glued
// to them (-f/path, -rf.env).
const maxGlued = 4

// gluedValue checks, on the deny side, the values a short option may have
// glued to it: -f/home/u/.ssh/id_rsa is grep's -f with a path, and which
// letters take a value is each program's own, so every tail after one to
// maxGlued letters counts.
func (op argumentUnderOp) gluedValue(s *script, w word, dirs []string, ev *evalCtx) string {
	if len(w.s) < 3 || w.s[0] != '-' || w.s[1] == '-' {
		return ""
	}
	for k := 2; k < len(w.s) && k <= 1+maxGlued; k++ {
		tail := w
		tail.s, tail.tilde = w.s[k:], false // no ~ expands inside a word
		got, ok := s.paths(tail, ev.call.Cwd, ev.call.Home, false)
		if !ok {
			continue
		}
		for _, p := range append(got, s.physicalPaths(tail, ev.call.Cwd, ev.call.Home, false)...) {
			if i := inList(p, dirs); i >= 0 {
				return fmt.Sprintf("%s may be an option with the value %s, under %s", w.raw, p, op.dirs[i])
			}
		}
	}
	return ""
}

// glob checks whether a pattern may expand to a path under one of the
// directories: component by component, in any case.
func (op argumentUnderOp) glob(s *script, w word, dirs []string, ev *evalCtx, deny bool) string {
	if !deny {
		return ""
	}
	lit := w
	lit.known = true
	got, ok := s.paths(lit, ev.call.Cwd, ev.call.Home, false)
	if !ok || strings.Contains(w.s, "**") {
		return fmt.Sprintf("glob %s may match anything", w.raw)
	}
	for _, g := range append(got, physicalGlobs(s.rawPaths(lit, ev.call.Cwd, ev.call.Home))...) {
		for i, d := range dirs {
			if strings.HasPrefix(d, "!") {
				continue // a glob is read without exclusions
			}
			if hasGlob(d) && globEntryMeet(g, d, s.dotglob) || !hasGlob(d) && globUnder(g, d) {
				return fmt.Sprintf("glob %s may match a path under %s", w.raw, op.dirs[i])
			}
		}
	}
	return ""
}

// physicalGlobs are globs with the directories before their first pattern
// component resolved as the kernel does (physical): k/* where k links to
// ~/.ssh is ~/.ssh/*, and h/../* where h links to ~/x is ~/*.
func physicalGlobs(raw []string) []string {
	out := make([]string, 0, len(raw))
	for _, g := range raw {
		parts := strings.Split(g, "/")
		k := 0
		for k < len(parts) && !hasGlob(parts[k]) {
			k++
		}
		if k <= 1 {
			out = append(out, path.Clean(g))
			continue
		}
		out = append(out, path.Clean(physical(strings.Join(parts[:k], "/"))+"/"+strings.Join(parts[k:], "/")))
	}
	return out
}

// globUnder reports whether a normalized pattern may match dir or a path
// inside it.
func globUnder(pattern, dir string) bool {
	ps := strings.Split(strings.ToLower(pattern), "/")
	ds := strings.Split(strings.ToLower(dir), "/")
	if dir == "/" {
		ds = []string{""}
	}
	if len(ps) < len(ds) {
		return false
	}
	for i, d := range ds {
		if ok, err := path.Match(ps[i], d); !ok && err == nil {
			return false
		}
	}
	return true
}

func (op argumentUnderOp) explainMatch(v gjson.Result, ev *evalCtx) string {
	return op.find(v, ev)
}
