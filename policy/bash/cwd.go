package bash

import (
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// cwdOp is a change of directory a script may make: cd DIR, pushd DIR,
// env -C DIR, git -C DIR.
type cwdOp struct {
	dir  Word
	home bool // cd with no operand
	loop bool // inside a loop, a function or a trap: it may apply again
}

type cwdOps []cwdOp

// cd records a change of directory to dir.
func (w *walker) cd(dir Word) {
	w.cwds = append(w.cwds, cwdOp{dir: dir, loop: w.loop > 0})
}

// cdArgs reads cd [-L|-P|-e|-@] [DIR] and pushd [-n] [DIR|+N|-N].
func (w *walker) cdArgs(name string, args []Word) {
	for len(args) > 0 && args[0].Known && len(args[0].Value) > 1 && args[0].Value[0] == '-' && !AllDigits(args[0].Value[1:]) {
		done := args[0].Value == "--"
		args = args[1:]
		if done {
			break
		}
	}
	switch {
	case len(args) == 0:
		if name == "cd" {
			w.cwds = append(w.cwds, cwdOp{home: true, loop: w.loop > 0})
		}
	case !args[0].Known:
		w.cd(args[0])
	case args[0].Value == "-":
		w.cd(unknownWord("-", false)) // $OLDPWD
	case name == "pushd" && len(args[0].Value) > 1 && (args[0].Value[0] == '+' || args[0].Value[0] == '-'):
		// rotates the directory stack: directories already counted
	default:
		w.cd(args[0])
	}
}

// cwdSet is where a script's relative paths may resolve: the session's
// working directory, and every directory the script may change to.
type cwdSet struct {
	dirs    []string // nil: only the session's working directory
	unknown bool     // a change of directory the matcher cannot follow
}

// maxDirs bounds the directories a script's relative paths are checked in.
const maxDirs = 8

// resolve applies the changes of directory, in order, to every directory
// reached so far: a cd may fail, so the directories before it remain. A
// relative change inside a loop, or with CDPATH or cdable_vars in play, is
// not followed.
func (ops cwdOps) resolve(cwd, home string, cdpath bool) cwdSet {
	if len(ops) == 0 {
		return cwdSet{}
	}
	set := cwdSet{dirs: []string{cwd}}
	for _, op := range ops {
		var next []string
		for _, d := range set.dirs {
			to, ok := op.apply(d, home, cdpath)
			if !ok {
				return cwdSet{unknown: true}
			}
			next = append(next, to)
			// cd -P (and every later path through it) goes where the
			// kernel leads: h/.. is the parent of h's target.
			if raw, ok := op.applyRaw(d, home); ok {
				if real := Physical(raw); real != to {
					next = append(next, real)
				}
			}
		}
		for _, to := range next {
			if !containsString(set.dirs, to) {
				set.dirs = append(set.dirs, to)
			}
		}
		if len(set.dirs) > maxDirs {
			return cwdSet{unknown: true}
		}
	}
	return set
}

// apply is where op leads from dir.
func (op cwdOp) apply(dir, home string, cdpath bool) (string, bool) {
	d := op.dir
	switch {
	case op.home:
		return home, home != ""
	case !d.Known:
		return "", false
	case d.Tilde:
		return path.Clean(home + d.Value[1:]), home != ""
	case strings.HasPrefix(d.Value, "/"):
		return path.Clean(d.Value), true
	case op.loop:
		return "", false
	case cdpath && d.Value != "." && d.Value != ".." && !strings.HasPrefix(d.Value, "./") && !strings.HasPrefix(d.Value, "../"):
		return "", false
	}
	return joinPath(dir, d.Value), true
}

// applyRaw is where op leads from dir before any cleaning, for physical.
func (op cwdOp) applyRaw(dir, home string) (string, bool) {
	d := op.dir
	switch {
	case op.home || !d.Known || op.loop:
		return "", false
	case d.Tilde:
		return home + d.Value[1:], home != ""
	}
	return RawJoin(dir, d.Value), true
}

// RawJoin is p against dir, not cleaned: a .. after a link stays for
// physical to resolve.
func RawJoin(dir, p string) string {
	if strings.HasPrefix(p, "/") || dir == "" {
		return p
	}
	return dir + "/" + p
}

// Physical resolves an absolute path as the kernel does: each run of
// components before a .. is resolved with its links (resolveLinks) before
// the .. applies, so that link/.. is the parent of the link's target, not
// the directory holding the link. p need not be clean.
func Physical(p string) string {
	if !strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	cur, pending := "/", []string{}
	for _, c := range strings.Split(p, "/") {
		if c != ".." {
			pending = append(pending, c)
			continue
		}
		if len(pending) > 0 {
			cur, pending = ResolveLinks(path.Join(append([]string{cur}, pending...)...)), pending[:0]
		}
		cur = path.Dir(cur)
	}
	return ResolveLinks(path.Join(append([]string{cur}, pending...)...))
}

// joinPath resolves p against dir, lexically.
func joinPath(dir, p string) string {
	if strings.HasPrefix(p, "/") || dir == "" {
		return path.Clean(p)
	}
	return path.Clean(dir + "/" + p)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Paths returns where a word, taken as a path, may point: ok is false when
// that depends on something the matcher cannot follow (the word's value, a
// change of directory, a changed root).
func (s *Script) Paths(w Word, cwd, home string, eq bool) ([]string, bool) {
	return s.pathsBy(w, cwd, home, eq, joinPath)
}

// Leads are where a word, taken as a path, may point for a deny or an
// ask: as written (paths) and as the kernel resolves it (physical, without
// the lexical cleaning first, so that a .. after a link goes to the parent
// of the link's target). ok as paths.
func (s *Script) Leads(w Word, cwd, home string, eq bool) ([]string, bool) {
	got, ok := s.Paths(w, cwd, home, eq)
	if !ok {
		return nil, false
	}
	real, _ := s.pathsBy(w, cwd, home, eq, func(dir, p string) string { return s.Physical(RawJoin(dir, p)) })
	return append(got, real...), true
}

// GlobLeads are leads for a glob taken as a literal pattern: the pattern
// as written, and with the directories before its first pattern component
// resolved (physicalGlobs).
func (s *Script) GlobLeads(lit Word, cwd, home string) ([]string, bool) {
	got, ok := s.Paths(lit, cwd, home, false)
	if !ok {
		return nil, false
	}
	raw, _ := s.pathsBy(lit, cwd, home, false, RawJoin)
	return append(got, s.PhysicalGlobs(raw)...), true
}

// Physical is the function Physical of raw, memoized for the script:
// every rule that reads the script's paths asks again.
func (s *Script) Physical(raw string) string {
	if r, ok := s.resolvedPaths[raw]; ok {
		return r
	}
	if s.resolvedPaths == nil {
		s.resolvedPaths = map[string]string{}
	}
	r := Physical(raw)
	s.resolvedPaths[raw] = r
	return r
}

func (s *Script) pathsBy(w Word, cwd, home string, eq bool, join func(dir, p string) string) ([]string, bool) {
	p, tilde := w.Value, w.Tilde
	if eq {
		_, p, _ = strings.Cut(w.Value, "=")
		tilde = w.eqTilde
	}
	switch {
	case !w.Known || s.rootMoved:
		return nil, false
	case tilde:
		if home == "" {
			return nil, false
		}
		return []string{join("", home+p[1:])}, true
	case strings.HasPrefix(p, "/") || s.dirs.dirs == nil && !s.dirs.unknown:
		return []string{join(cwd, p)}, true
	case s.dirs.unknown:
		return nil, false
	}
	out := make([]string, len(s.dirs.dirs))
	for i, d := range s.dirs.dirs {
		out[i] = join(d, p)
	}
	return out, true
}

// PathWords is every word of the script a program may take as a path:
// not a process substitution's /dev/fd path, nor a word only known at run
// time or a glob given to a program that reads no file's contents (echo
// $PATH, ls *: a function of such a name is walked as its own commands).
// What they print may still become another program's arguments: a script
// that may do that (xargs, a redirection into a file) or may turn a
// builtin off (enable -n echo, then a program named echo runs) has every
// word counted, and a known path always counts.
func (s *Script) PathWords() []Word {
	printed := len(s.Redirs) == 0
	for _, cmd := range s.Commands {
		if len(cmd.Argv) > 0 && (!cmd.Argv[0].Known || cmd.Argv[0].Value == "enable") {
			printed = false
		}
		for _, c := range cmd.Cands {
			printed = printed && !c.StdinArgs
		}
	}
	var out []Word
	for _, cmd := range s.Commands {
		out = append(out, cmd.Assigns...)
		onlyPrinted := printed && len(cmd.Argv) > 0 && cmd.Argv[0].Known && readsNoContents[cmd.Argv[0].Value]
		for i, w := range cmd.Argv {
			if w.FD || onlyPrinted && i > 0 && !w.Known {
				continue
			}
			if i > 0 || !w.Known || strings.Contains(w.Value, "/") {
				out = append(out, w)
			}
		}
	}
	for _, w := range s.Redirs {
		if !w.FD {
			out = append(out, w)
		}
	}
	return out
}

// PhysicalGlobs are globs with the directories before their first pattern
// component resolved as the kernel does (physical): k/* where k links to
// ~/.ssh is ~/.ssh/*, and h/../* where h links to ~/x is ~/*.
func (s *Script) PhysicalGlobs(raw []string) []string {
	out := make([]string, 0, len(raw))
	for _, g := range raw {
		parts := strings.Split(g, "/")
		k := 0
		for k < len(parts) && !HasGlob(parts[k]) {
			k++
		}
		if k <= 1 {
			out = append(out, path.Clean(g))
			continue
		}
		out = append(out, path.Clean(s.Physical(strings.Join(parts[:k], "/"))+"/"+strings.Join(parts[k:], "/")))
	}
	return out
}

// ResolveLinks resolves the symbolic links of the longest part of p that
// exists: of the longest of p and its ancestors (not "/" nor ".") that
// filepath.EvalSymlinks resolves, with the rest of p after it.
//
// An ancestor resolves when a longer one does (resolving the longer goes
// through it), so the longest is found by bisection: a path of n
// components costs O(log n) resolutions. (Trying each from the longest
// down was quadratic in the path's length: a Read of a file_path of
// 40,000 missing components, 80 KB that the model can write, held the
// daemon's CPU for 5 s.) p is clean (normalizePath).
//
// A link whose target does not exist (yet) is followed too: a Write
// through it makes the target.
func ResolveLinks(p string) string {
	for hops := 0; hops < 40; hops++ {
		next, ok := resolveOnce(p)
		if !ok {
			return next
		}
		p = next
	}
	return p
}

// LeavesCwd reports whether the script's relative paths may resolve
// somewhere other than the session's working directory: it changes
// directory.
func (s *Script) LeavesCwd() bool { return s.dirs.dirs != nil || s.dirs.unknown }

// readsNoContents are the programs that print their arguments, or what
// the file system says of the paths they name (names, sizes, modes), and
// read no file's contents.
var readsNoContents = map[string]bool{"echo": true, "printf": true, "ls": true, "stat": true, "du": true,
	"basename": true, "dirname": true, "realpath": true, "test": true, "[": true}

// resolveOnce resolves what exists of p, then follows the dangling link
// after it, if there is one (ok).
func resolveOnce(p string) (string, bool) {
	// The ends of p's ancestors, shortest first, then p's own.
	var ends []int
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			ends = append(ends, i)
		}
	}
	if p != "/" && p != "." {
		ends = append(ends, len(p))
	}
	// How many of them resolve.
	n := sort.Search(len(ends), func(i int) bool {
		_, err := filepath.EvalSymlinks(p[:ends[i]])
		return err != nil
	})
	real, rest := "/", p
	if n > 0 {
		var err error
		if real, err = filepath.EvalSymlinks(p[:ends[n-1]]); err != nil {
			return p, false // changed since
		}
		rest = p[min(ends[n-1]+1, len(p)):]
	}
	if !path.IsAbs(p) {
		return p, false
	}
	first, after, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
	if first == "" {
		return path.Join(real, rest), false
	}
	target, err := os.Readlink(path.Join(real, first))
	if err != nil {
		return path.Join(real, rest), false // not a link: nothing after it exists
	}
	if !path.IsAbs(target) {
		target = path.Join(real, target)
	}
	return path.Join(target, after), true
}

// HasGlob reports whether a path list entry is a pattern.
func HasGlob(s string) bool { return strings.ContainsAny(s, "*?[") }
