package policy

import (
	"fmt"
	"os"
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
	if deny {
		if found := op.findVisits(s, dirs, ev); found != "" {
			return found
		}
		return op.wholeTrees(s, dirs, ev)
	}
	return ""
}

// wholeTrees checks, on the deny side, the directories a program reads
// whole (grep -r, rg, diff -r, cp -r, tar, rsync ...): one that holds a
// named entry of the list reads it too (grep -r token ~ reads ~/.netrc).
// The list's patterns are not looked for inside a tree: a .env may be in
// any directory, and grep -rn TODO . stays what it is.
func (op argumentUnderOp) wholeTrees(s *script, dirs []string, ev *evalCtx) string {
	for _, cmd := range s.commands {
		for _, c := range cmd.cands {
			if !readsTrees(c.argv) {
				continue
			}
			for _, w := range c.argv[1:] {
				if !w.known || strings.HasPrefix(w.s, "-") {
					continue
				}
				got, _ := s.leads(w, ev.call.Cwd, ev.call.Home, false)
				for _, p := range got {
					for i, d := range dirs {
						if !hasGlob(d) && !strings.HasPrefix(d, "!") && d != p && pathUnder(d, p) {
							return fmt.Sprintf("`%s` reads all of %s, %s included", argvText(c.argv), p, op.dirs[i])
						}
					}
				}
			}
		}
	}
	return ""
}

// readsTrees reports whether a program reads the directories it is given
// whole: always (rg, tar ...), or with its recursive option.
func readsTrees(argv []word) bool {
	if len(argv) == 0 || !argv[0].known {
		return false
	}
	switch path.Base(argv[0].s) {
	case "rg", "ag", "ack", "tar", "rsync", "zip":
		return true
	case "grep", "egrep", "fgrep", "diff", "cp", "scp", "git":
	default:
		return false
	}
	for _, a := range argv[1:] {
		switch {
		case !a.known:
			return true
		case a.s == "--recursive" || a.s == "--dereference-recursive" || a.s == "--archive" || a.s == "--directories=recurse":
			return true
		case len(a.s) > 1 && a.s[0] == '-' && a.s[1] != '-' && strings.ContainsAny(a.s, "rRa"):
			return path.Base(argv[0].s) != "git"
		case a.s == "grep" && path.Base(argv[0].s) == "git":
			return true // git grep reads the tree of each path it names
		}
	}
	return false
}

// findVisits checks, on the deny side, the files find hands to what its
// -exec, -execdir, -ok and -okdir run ({}): any file under its starting
// points whose name its -name may match, dot files included. (A find that
// only prints names opens none.)
func (op argumentUnderOp) findVisits(s *script, dirs []string, ev *evalCtx) string {
	for _, cmd := range s.commands {
		for _, c := range cmd.cands {
			if len(c.argv) == 0 || !c.argv[0].known || path.Base(c.argv[0].s) != "find" || !findRuns(c.argv) {
				continue
			}
			roots, name := findRoots(c.argv)
			for _, r := range roots {
				if !r.known {
					return fmt.Sprintf("find starts from %s, only known at run time", r.raw)
				}
				got, ok := s.leads(r, ev.call.Cwd, ev.call.Home, false)
				if !ok {
					return fmt.Sprintf("find starts from %s, which may be anywhere", r.raw)
				}
				for _, p := range got {
					for i, d := range dirs {
						if !strings.HasPrefix(d, "!") && findReaches(p, name, d) {
							return fmt.Sprintf("find hands what it runs the files under %s named %s, which may be under %s", r.raw, name, op.dirs[i])
						}
					}
				}
			}
		}
	}
	return ""
}

// findReaches reports whether find, started at root and matching name
// (find's names match dot files too), may hand over what the entry names
// or a file in it: root is in the entry, or the entry lies under root
// with a name that name may match (or is a directory, whose files may
// have any name).
func findReaches(root, name, entry string) bool {
	if !hasGlob(entry) {
		if pathUnder(root, entry) {
			return true
		}
		if !pathUnder(entry, root) {
			return false
		}
		fi, err := os.Stat(entry)
		return err == nil && fi.IsDir() || globsMeet(strings.ToLower(name), strings.ToLower(path.Base(entry)))
	}
	if globEntryMeet(root, entry, true) {
		return true // root is in what the pattern names
	}
	last := path.Base(entry)
	return globEntryMeet(strings.TrimSuffix(root, "/")+"/**/"+last, entry, true) &&
		globsMeet(strings.ToLower(name), strings.ToLower(last))
}

// findRuns reports whether find runs a program on what it finds.
func findRuns(argv []word) bool {
	for _, a := range argv[1:] {
		if a.known && (a.s == "-exec" || a.s == "-execdir" || a.s == "-ok" || a.s == "-okdir") {
			return true
		}
	}
	return false
}

// findRoots are find's starting points (. when it names none), and the
// name its files must match: the pattern of its only -name, else *.
func findRoots(argv []word) ([]word, string) {
	var roots []word
	i := 1
	for i < len(argv) && argv[i].known && (argv[i].s == "-L" || argv[i].s == "-H" || argv[i].s == "-P") {
		i++
	}
	for ; i < len(argv); i++ {
		a := argv[i]
		if a.known && (strings.HasPrefix(a.s, "-") || a.s == "(" || a.s == "!") {
			break
		}
		roots = append(roots, a)
	}
	if len(roots) == 0 {
		roots = []word{literalWord(".")}
	}
	name, names := "*", 0
	for j := i; j+1 < len(argv); j++ {
		switch {
		case !argv[j].known:
			names = 2
		case argv[j].s == "-name" || argv[j].s == "-iname":
			names++
			if argv[j+1].known && argv[j].s == "-name" {
				name = argv[j+1].s
			} else {
				names = 2
			}
		}
	}
	if names != 1 {
		name = "*"
	}
	return roots, name
}

// pathWords is every word of the script a program may take as a path:
// not a process substitution's /dev/fd path, nor a word only known at run
// time or a glob given to a program that reads no file's contents (echo
// $PATH, ls *: a function of such a name is walked as its own commands).
// What they print may still become another program's arguments: a script
// that may do that (xargs, a redirection into a file) or may turn a
// builtin off (enable -n echo, then a program named echo runs) has every
// word counted, and a known path always counts.
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
		onlyPrinted := printed && len(cmd.argv) > 0 && cmd.argv[0].known && readsNoContents[cmd.argv[0].s]
		for i, w := range cmd.argv {
			if w.fd || onlyPrinted && i > 0 && !w.known {
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

// readsNoContents are the programs that print their arguments, or what
// the file system says of the paths they name (names, sizes, modes), and
// read no file's contents.
var readsNoContents = map[string]bool{"echo": true, "printf": true, "ls": true, "stat": true, "du": true,
	"basename": true, "dirname": true, "realpath": true, "test": true, "[": true}

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
		where := s.paths
		if deny {
			where = s.leads
		}
		got, ok := where(w, ev.call.Cwd, ev.call.Home, eq)
		if !ok {
			if deny {
				return fmt.Sprintf("%s may point anywhere: the script changes directory or root in a way the matcher cannot follow", w.raw)
			}
			continue
		}
		for _, p := range got {
			if i := inList(p, dirs, deny); i >= 0 {
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

// atValue checks, on the deny side, a value that names a file after an @
// or a colon: curl -d @.env and -F f=@key send the file's contents, other
// programs read @FILE as a list of arguments, and git show HEAD:.env
// prints the committed one.
func (op argumentUnderOp) atValue(s *script, w word, dirs []string, ev *evalCtx) string {
	// Every reading: after an @ (curl's), after each colon (git's
	// REV:PATH, @:PATH, :0:PATH, -L :func:PATH), and after the = of an
	// option or assignment.
	var values []string
	for _, v := range []string{w.s, afterEq(w.s)} {
		if v == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(v, "@"); ok {
			values = append(values, rest)
		}
		if strings.Contains(v, "://") {
			continue
		}
		for i := 0; i < len(v); i++ {
			if v[i] == ':' {
				values = append(values, v[i+1:])
			}
		}
	}
	for _, rest := range values {
		if rest == "" {
			continue
		}
		file := w
		file.s, file.tilde = rest, false // no ~ expands after @ or :
		got, ok := s.leads(file, ev.call.Cwd, ev.call.Home, false)
		if !ok {
			return fmt.Sprintf("%s may name a file anywhere", w.raw)
		}
		for _, p := range got {
			if i := inList(p, dirs, true); i >= 0 {
				return fmt.Sprintf("%s names %s, under %s", w.raw, p, op.dirs[i])
			}
		}
	}
	return ""
}

// afterEq is what follows the first = of s, or "".
func afterEq(s string) string {
	_, after, _ := strings.Cut(s, "=")
	return after
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
		got, ok := s.leads(tail, ev.call.Cwd, ev.call.Home, false)
		if !ok {
			continue
		}
		for _, p := range got {
			if i := inList(p, dirs, true); i >= 0 {
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
	got, ok := s.globLeads(lit, ev.call.Cwd, ev.call.Home)
	if !ok || strings.Contains(w.s, "**") {
		return fmt.Sprintf("glob %s may match anything", w.raw)
	}
	for _, g := range got {
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
func (s *script) physicalGlobs(raw []string) []string {
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
		out = append(out, path.Clean(s.physical(strings.Join(parts[:k], "/"))+"/"+strings.Join(parts[k:], "/")))
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
