package policy

import (
	"path"
	"strings"

	"github.com/toolgate/toolgate/policy/bash"
)

// matcher compares the words of one program with prefixes. On the deny
// side (deny is set) a word only known at run time may be anything: an
// unquoted one may even become several words or none.
type matcher struct {
	ev   *evalCtx
	s    *bash.Script
	deny bool
}

func (m matcher) any(prefixes []prefix, argv []bash.Word) bool {
	for _, p := range prefixes {
		switch {
		case !m.deny:
			if m.prefix(p.words, argv, 0, 0) && unsafeOption(p, argv) == "" {
				return true
			}
		case p.opts == nil:
			if m.prefix(p.words, argv, 0, 0) {
				return true
			}
		case m.prefix(p.lead, argv, 0, 0) && m.options(p.opts, argv):
			return true
		}
	}
	return false
}

// unsafeOption is the first option of argv that the program's model
// (models.go) does not know to be safe, past the words of the prefix
// that allows it, or "".
func unsafeOption(p prefix, argv []bash.Word) string {
	model, n, ok := modelOf(argv)
	if !ok {
		return ""
	}
	return model.unsafeOption(argv, max(n, len(p.words)))
}

// unsafeFor is, when a prefix covers argv's words but the program's model
// refuses one of its options, that option; else "".
func (m matcher) unsafeFor(prefixes []prefix, argv []bash.Word) string {
	for _, p := range prefixes {
		if m.prefix(p.words, argv, 0, 0) {
			if o := unsafeOption(p, argv); o != "" {
				return o
			}
		}
	}
	return ""
}

// options reports whether the command may have every option, anywhere
// before --: a short option as a letter of any cluster (-r in -fr), a long
// one whole or abbreviated (--recursive, --rec). A word only known at run
// time may be any option.
func (m matcher) options(opts []string, argv []bash.Word) bool {
	for _, o := range opts {
		if strings.HasPrefix(o, "--") {
			if !hasOption(argv, func(w string) bool {
				name, _, _ := strings.Cut(w, "=")
				return len(name) > 3 && strings.HasPrefix(o, name)
			}) {
				return false
			}
			continue
		}
		for i := 1; i < len(o); i++ {
			if !hasOption(argv, func(w string) bool {
				return w[1] != '-' && strings.IndexByte(w[1:], o[i]) >= 0
			}) {
				return false
			}
		}
	}
	return true
}

// hasOption reports whether some option word of the command, before --,
// satisfies has; a word only known at run time may.
func hasOption(argv []bash.Word, has func(string) bool) bool {
	for _, w := range argv[1:] {
		switch {
		case !w.Known:
			return true
		case w.Value == "--":
			return false
		case len(w.Value) > 1 && w.Value[0] == '-' && has(w.Value):
			return true
		}
	}
	return false
}

// prefix reports whether the words of argv from i on, as the shell may
// expand them, continue the prefix from j on.
func (m matcher) prefix(p []string, argv []bash.Word, i, j int) bool {
	for ; j < len(p); i++ {
		if i == len(argv) {
			return false
		}
		w := argv[i]
		switch {
		case w.Known:
			if !m.word(p[j], w, j == 0) {
				return false
			}
			j++
		case !m.deny:
			return false
		case w.Glob:
			// The pattern becomes the names it matches, or stays as is.
			for k := j; k < len(p) && m.globWord(p[k], w, k == 0); k++ {
				if m.prefix(p, argv, i+1, k+1) {
					return true
				}
			}
		case w.Split:
			return true // it may become the rest of the prefix
		default:
			j++ // exactly one word, any value
		}
	}
	return true
}

// word compares a known word with a prefix word; the first word names a
// program.
func (m matcher) word(rule string, w bash.Word, program bool) bool {
	if !program {
		return w.Value == rule
	}
	ruleHasPath := strings.IndexByte(rule, '/') >= 0
	callHasPath := strings.IndexByte(w.Value, '/') >= 0
	switch {
	case !ruleHasPath && !callHasPath:
		return w.Value == rule
	case !ruleHasPath:
		return m.deny && path.Base(w.Value) == rule // /bin/rm is rm
	case !callHasPath:
		return m.deny && path.Base(rule) == w.Value // rm may be /usr/bin/rm on PATH
	}
	return m.samePath(rule, w)
}

// samePath compares a program named by path with a prefix's path, both
// resolved against the working directory. On the allow side a relative
// program only matches when the script never changes directory.
func (m matcher) samePath(rule string, w bash.Word) bool {
	want := m.ev.normalizeRule(rule)
	relative := !w.Tilde && !strings.HasPrefix(w.Value, "/")
	if !m.deny && relative && m.s.LeavesCwd() {
		return false
	}
	got, ok := m.s.Paths(w, m.ev.call.Cwd, m.ev.call.Home, false)
	if !ok {
		// Somewhere the matcher cannot tell: only the file's name is known.
		base := path.Base(path.Clean(w.Value))
		return m.deny && (base == ".." || base == path.Base(want))
	}
	for _, g := range got {
		if g == want {
			return true
		}
	}
	return false
}

// globWord reports whether a glob may expand to the prefix word: any case
// (nocaseglob) and dot files (dotglob) included.
func (m matcher) globWord(rule string, w bash.Word, program bool) bool {
	pattern, name := strings.ToLower(w.Value), strings.ToLower(rule)
	if program {
		pattern, name = path.Base(pattern), path.Base(name)
	}
	ok, err := path.Match(pattern, name)
	return ok || err != nil
}
