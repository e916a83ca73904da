package policy

import (
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/policy/bash"
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
	case s.Unknown != "" && deny:
		return "the script may run what the matcher cannot see: " + s.Unknown
	case s.Unknown != "":
		return ""
	}
	dirs := ev.normalizeEntries(op.dirs)
	for _, w := range s.PathWords() {
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
func (op argumentUnderOp) wholeTrees(s *bash.Script, dirs []string, ev *evalCtx) string {
	for _, cmd := range s.Commands {
		for _, c := range cmd.Cands {
			if !readsTrees(c.Argv) {
				continue
			}
			for _, w := range c.Argv[1:] {
				if !w.Known || strings.HasPrefix(w.Value, "-") {
					continue
				}
				got, _ := s.Leads(w, ev.call.Cwd, ev.call.Home, false)
				for _, p := range got {
					for i, d := range dirs {
						if !bash.HasGlob(d) && !strings.HasPrefix(d, "!") && d != p && pathUnder(d, p) {
							return fmt.Sprintf("`%s` reads all of %s, %s included", argvText(c.Argv), p, op.dirs[i])
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
func readsTrees(argv []bash.Word) bool {
	if len(argv) == 0 || !argv[0].Known {
		return false
	}
	switch path.Base(argv[0].Value) {
	case "rg", "ag", "ack", "tar", "rsync", "zip":
		return true
	case "grep", "egrep", "fgrep", "diff", "cp", "scp", "git":
	default:
		return false
	}
	for _, a := range argv[1:] {
		switch {
		case !a.Known:
			return true
		case a.Value == "--recursive" || a.Value == "--dereference-recursive" || a.Value == "--archive" || a.Value == "--directories=recurse":
			return true
		case len(a.Value) > 1 && a.Value[0] == '-' && a.Value[1] != '-' && strings.ContainsAny(a.Value, "rRa"):
			return path.Base(argv[0].Value) != "git"
		case a.Value == "grep" && path.Base(argv[0].Value) == "git":
			return true // git grep reads the tree of each path it names
		}
	}
	return false
}

// findVisits checks, on the deny side, the files find hands to what its
// -exec, -execdir, -ok and -okdir run ({}): any file under its starting
// points whose name its -name may match, dot files included. (A find that
// only prints names opens none.)
func (op argumentUnderOp) findVisits(s *bash.Script, dirs []string, ev *evalCtx) string {
	for _, cmd := range s.Commands {
		for _, c := range cmd.Cands {
			if len(c.Argv) == 0 || !c.Argv[0].Known || path.Base(c.Argv[0].Value) != "find" || !findRuns(c.Argv) {
				continue
			}
			roots, name := findRoots(c.Argv)
			for _, r := range roots {
				if !r.Known {
					return fmt.Sprintf("find starts from %s, only known at run time", r.Raw)
				}
				got, ok := s.Leads(r, ev.call.Cwd, ev.call.Home, false)
				if !ok {
					return fmt.Sprintf("find starts from %s, which may be anywhere", r.Raw)
				}
				for _, p := range got {
					for i, d := range dirs {
						if !strings.HasPrefix(d, "!") && findReaches(p, name, d) {
							return fmt.Sprintf("find hands what it runs the files under %s named %s, which may be under %s", r.Raw, name, op.dirs[i])
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
	if !bash.HasGlob(entry) {
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
func findRuns(argv []bash.Word) bool {
	for _, a := range argv[1:] {
		if a.Known && (a.Value == "-exec" || a.Value == "-execdir" || a.Value == "-ok" || a.Value == "-okdir") {
			return true
		}
	}
	return false
}

// findRoots are find's starting points (. when it names none), and the
// name its files must match: the pattern of its only -name, else *.
func findRoots(argv []bash.Word) ([]bash.Word, string) {
	var roots []bash.Word
	i := 1
	for i < len(argv) && argv[i].Known && (argv[i].Value == "-L" || argv[i].Value == "-H" || argv[i].Value == "-P") {
		i++
	}
	for ; i < len(argv); i++ {
		a := argv[i]
		if a.Known && (strings.HasPrefix(a.Value, "-") || a.Value == "(" || a.Value == "!") {
			break
		}
		roots = append(roots, a)
	}
	if len(roots) == 0 {
		roots = []bash.Word{bash.Literal(".")}
	}
	name, names := "*", 0
	for j := i; j+1 < len(argv); j++ {
		switch {
		case !argv[j].Known:
			names = 2
		case argv[j].Value == "-name" || argv[j].Value == "-iname":
			names++
			if argv[j+1].Known && argv[j].Value == "-name" {
				name = argv[j+1].Value
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

// word checks one word: as a whole, and its value after = (--file=PATH).
func (op argumentUnderOp) word(s *bash.Script, w bash.Word, dirs []string, ev *evalCtx, deny bool) string {
	if !w.Known {
		if w.Glob {
			return op.glob(s, w, dirs, ev, deny)
		}
		if items, ok := s.LoopValues(w); ok && deny {
			for _, item := range items {
				if found := op.word(s, item, dirs, ev, deny); found != "" {
					return found
				}
			}
			return ""
		}
		if deny {
			return fmt.Sprintf("word %s is only known at run time", w.Raw)
		}
		return ""
	}
	for _, eq := range []bool{false, true} {
		if eq && !strings.Contains(w.Value, "=") {
			break
		}
		where := s.Paths
		if deny {
			where = s.Leads
		}
		got, ok := where(w, ev.call.Cwd, ev.call.Home, eq)
		if !ok {
			if deny {
				return fmt.Sprintf("%s may point anywhere: the script changes directory or root in a way the matcher cannot follow", w.Raw)
			}
			continue
		}
		for _, p := range got {
			if i := inList(p, dirs, deny); i >= 0 {
				return fmt.Sprintf("%s is %s, under %s", w.Raw, p, op.dirs[i])
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
func (op argumentUnderOp) atValue(s *bash.Script, w bash.Word, dirs []string, ev *evalCtx) string {
	// Every reading: after an @ (curl's), after each colon (git's
	// REV:PATH, @:PATH, :0:PATH, -L :func:PATH), and after the = of an
	// option or assignment.
	var values []string
	for _, v := range []string{w.Value, afterEq(w.Value)} {
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
		file.Value, file.Tilde = rest, false // no ~ expands after @ or :
		got, ok := s.Leads(file, ev.call.Cwd, ev.call.Home, false)
		if !ok {
			return fmt.Sprintf("%s may name a file anywhere", w.Raw)
		}
		for _, p := range got {
			if i := inList(p, dirs, true); i >= 0 {
				return fmt.Sprintf("%s names %s, under %s", w.Raw, p, op.dirs[i])
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
func (op argumentUnderOp) gluedValue(s *bash.Script, w bash.Word, dirs []string, ev *evalCtx) string {
	if len(w.Value) < 3 || w.Value[0] != '-' || w.Value[1] == '-' {
		return ""
	}
	for k := 2; k < len(w.Value) && k <= 1+maxGlued; k++ {
		tail := w
		tail.Value, tail.Tilde = w.Value[k:], false // no ~ expands inside a word
		got, ok := s.Leads(tail, ev.call.Cwd, ev.call.Home, false)
		if !ok {
			continue
		}
		for _, p := range got {
			if i := inList(p, dirs, true); i >= 0 {
				return fmt.Sprintf("%s may be an option with the value %s, under %s", w.Raw, p, op.dirs[i])
			}
		}
	}
	return ""
}

// glob checks whether a pattern may expand to a path under one of the
// directories: component by component, in any case.
func (op argumentUnderOp) glob(s *bash.Script, w bash.Word, dirs []string, ev *evalCtx, deny bool) string {
	if !deny {
		return ""
	}
	lit := w
	lit.Known = true
	got, ok := s.GlobLeads(lit, ev.call.Cwd, ev.call.Home)
	if !ok || strings.Contains(w.Value, "**") {
		return fmt.Sprintf("glob %s may match anything", w.Raw)
	}
	for _, g := range got {
		for i, d := range dirs {
			if strings.HasPrefix(d, "!") {
				continue // a glob is read without exclusions
			}
			if bash.HasGlob(d) && globEntryMeet(g, d, s.Dotglob) || !bash.HasGlob(d) && globUnder(g, d) {
				return fmt.Sprintf("glob %s may match a path under %s", w.Raw, op.dirs[i])
			}
		}
	}
	return ""
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
