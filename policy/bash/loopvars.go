package bash

import (
	"regexp"
)

// A for loop's variable holds each of the loop's items in turn: in
// `for f in *.go; do gofmt -l "$f"; done`, "$f" is a name *.go matches,
// not any word. The deny side reads "$f" as its items only when nothing
// else in the script can set the variable: its name appears nowhere in
// the command line but in the loop's head and as "$f" or "${f}" (so no
// f=..., read f, ${f:=...}, no other loop over it), and the script runs
// none of the builtins that set a variable whose name they get as a word
// (read "$x", printf -v "$x", declare, eval ...), since that word may
// spell the name at run time. Every item must be known or a glob.

// quotedVar is a word that is exactly one quoted variable: "$f", "${f}".
var quotedVar = regexp.MustCompile(`^"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})"$`)

// setters are the builtins (and wrappers that run them) that may set a
// variable named by a word.
var setters = map[string]bool{"read": true, "declare": true, "typeset": true, "local": true, "export": true,
	"readonly": true, "printf": true, "mapfile": true, "readarray": true, "getopts": true, "let": true,
	"eval": true, "unset": true, "source": true, ".": true, "alias": true, "builtin": true, "command": true,
	"coproc": true, "wait": true, "exec": true}

// addLoop records a for loop's variable and items; a variable two loops
// set, or one with an item only known at run time, holds anything.
func (s *Script) addLoop(name string, items []Word) {
	if s.loops == nil {
		s.loops = map[string][]Word{}
	}
	if _, twice := s.loops[name]; twice {
		s.loops[name] = nil
		return
	}
	for _, it := range items {
		if !it.Known && !it.Glob {
			s.loops[name] = nil
			return
		}
	}
	s.loops[name] = items
}

// LoopValues are the values a word may have when it is a for loop's
// variable that nothing else sets, or false.
func (s *Script) LoopValues(w Word) ([]Word, bool) {
	m := quotedVar.FindStringSubmatch(w.Raw)
	if m == nil {
		return nil, false
	}
	name := m[1] + m[2]
	items := s.loops[name]
	if items == nil {
		return nil, false
	}
	for _, cmd := range s.Commands {
		for _, c := range cmd.Cands {
			if len(c.Argv) == 0 || !c.Argv[0].Known || setters[c.Argv[0].Value] {
				return nil, false
			}
		}
	}
	q := regexp.QuoteMeta(name)
	rest := regexp.MustCompile(`\bfor\s+`+q+`\s+in\b|\$`+q+`\b|\$\{`+q+`\}`).ReplaceAllString(s.src, "")
	if regexp.MustCompile(`\b` + q + `\b`).MatchString(rest) {
		return nil, false
	}
	return items, true
}
