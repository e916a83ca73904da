package policy

import (
	"path"
	"strings"
)

// cwdOp is a change of directory a script may make: cd DIR, pushd DIR,
// env -C DIR, git -C DIR.
type cwdOp struct {
	dir  word
	home bool // cd with no operand
	loop bool // inside a loop, a function or a trap: it may apply again
}

type cwdOps []cwdOp

// cd records a change of directory to dir.
func (w *walker) cd(dir word) {
	w.cwds = append(w.cwds, cwdOp{dir: dir, loop: w.loop > 0})
}

// cdArgs reads cd [-L|-P|-e|-@] [DIR] and pushd [-n] [DIR|+N|-N].
func (w *walker) cdArgs(name string, args []word) {
	for len(args) > 0 && args[0].known && len(args[0].s) > 1 && args[0].s[0] == '-' && !allDigits(args[0].s[1:]) {
		done := args[0].s == "--"
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
	case !args[0].known:
		w.cd(args[0])
	case args[0].s == "-":
		w.cd(unknownWord("-", false)) // $OLDPWD
	case name == "pushd" && len(args[0].s) > 1 && (args[0].s[0] == '+' || args[0].s[0] == '-'):
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
				if real := physical(raw); real != to {
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
	case !d.known:
		return "", false
	case d.tilde:
		return path.Clean(home + d.s[1:]), home != ""
	case strings.HasPrefix(d.s, "/"):
		return path.Clean(d.s), true
	case op.loop:
		return "", false
	case cdpath && d.s != "." && d.s != ".." && !strings.HasPrefix(d.s, "./") && !strings.HasPrefix(d.s, "../"):
		return "", false
	}
	return joinPath(dir, d.s), true
}

// applyRaw is where op leads from dir before any cleaning, for physical.
func (op cwdOp) applyRaw(dir, home string) (string, bool) {
	d := op.dir
	switch {
	case op.home || !d.known || op.loop:
		return "", false
	case d.tilde:
		return home + d.s[1:], home != ""
	}
	return rawJoin(dir, d.s), true
}

// rawJoin is p against dir, not cleaned: a .. after a link stays for
// physical to resolve.
func rawJoin(dir, p string) string {
	if strings.HasPrefix(p, "/") || dir == "" {
		return p
	}
	return dir + "/" + p
}

// physical resolves an absolute path as the kernel does: each run of
// components before a .. is resolved with its links (resolveLinks) before
// the .. applies, so that link/.. is the parent of the link's target, not
// the directory holding the link. p need not be clean.
func physical(p string) string {
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
			cur, pending = resolveLinks(path.Join(append([]string{cur}, pending...)...)), pending[:0]
		}
		cur = path.Dir(cur)
	}
	return resolveLinks(path.Join(append([]string{cur}, pending...)...))
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

// paths returns where a word, taken as a path, may point: ok is false when
// that depends on something the matcher cannot follow (the word's value, a
// change of directory, a changed root).
func (s *script) paths(w word, cwd, home string, eq bool) ([]string, bool) {
	return s.pathsBy(w, cwd, home, eq, joinPath)
}

// leads are where a word, taken as a path, may point for a deny or an
// ask: as written (paths) and as the kernel resolves it (physical, without
// the lexical cleaning first, so that a .. after a link goes to the parent
// of the link's target). ok as paths.
func (s *script) leads(w word, cwd, home string, eq bool) ([]string, bool) {
	got, ok := s.paths(w, cwd, home, eq)
	if !ok {
		return nil, false
	}
	real, _ := s.pathsBy(w, cwd, home, eq, func(dir, p string) string { return s.physical(rawJoin(dir, p)) })
	return append(got, real...), true
}

// globLeads are leads for a glob taken as a literal pattern: the pattern
// as written, and with the directories before its first pattern component
// resolved (physicalGlobs).
func (s *script) globLeads(lit word, cwd, home string) ([]string, bool) {
	got, ok := s.paths(lit, cwd, home, false)
	if !ok {
		return nil, false
	}
	raw, _ := s.pathsBy(lit, cwd, home, false, rawJoin)
	return append(got, s.physicalGlobs(raw)...), true
}

// physical is physical(raw), once per script: every rule that reads the
// script's paths asks again.
func (s *script) physical(raw string) string {
	if r, ok := s.resolvedPaths[raw]; ok {
		return r
	}
	if s.resolvedPaths == nil {
		s.resolvedPaths = map[string]string{}
	}
	r := physical(raw)
	s.resolvedPaths[raw] = r
	return r
}

func (s *script) pathsBy(w word, cwd, home string, eq bool, join func(dir, p string) string) ([]string, bool) {
	p, tilde := w.s, w.tilde
	if eq {
		_, p, _ = strings.Cut(w.s, "=")
		tilde = w.eqTilde
	}
	switch {
	case !w.known || s.rootMoved:
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
