package bash

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Word is one shell word as the matcher sees it before the shell runs.
type Word struct {
	Value string // the value after quote removal when known; the pattern when glob
	Raw   string // the word as written, for explanations
	Known bool   // the value is static
	Glob  bool   // unquoted glob characters: s is a pattern, quoted ones escaped with \
	Split bool   // unknown and unquoted: the shell may make any number of words of it
	Tilde bool   // s starts with an unquoted ~ that the shell replaces with the home
	// eqTilde: the word is NAME=~..., and bash replaces the ~ after = too.
	eqTilde bool
	// FD: the word is one process substitution, <(...) or >(...): unknown
	// as a value, but always a /dev/fd path, never a file's name.
	FD bool
}

// Literal is a word the matcher made up (a prefix word, a part of a
// joined script); it is known and carries no shell syntax.
func Literal(s string) Word { return Word{Value: s, Raw: s, Known: true} }

// mayBeOption reports whether a word may be, or become, an option (-x):
// a word only known at run time may, unless it starts with something else.
func mayBeOption(w Word) bool {
	switch {
	case w.Known:
		return strings.HasPrefix(w.Value, "-")
	case w.Raw == "":
		return true
	}
	c := w.Raw[0]
	return c == '-' || strings.IndexByte("$\"'`\\*?[{~", c) >= 0
}

// unknownWord is a word whose value only the running shell knows.
func unknownWord(raw string, split bool) Word { return Word{Raw: raw, Split: split} }

// resolve returns what the shell makes of a word, as far as it is static:
// quotes removed, and unknown when it has expansions ($x, $(...), $'...'),
// brace expansion or an unusual tilde; globs keep their pattern.
func resolve(w *syntax.Word, src string) Word {
	raw := wordText(w, src)
	if len(w.Parts) == 1 {
		if lit, ok := w.Parts[0].(*syntax.Lit); ok && !strings.ContainsAny(lit.Value, "\\*?[{~") {
			return Word{Value: lit.Value, Raw: raw, Known: true}
		}
	}
	r := resolver{raw: raw}
	for i, part := range w.Parts {
		r.part(part, i, len(w.Parts))
		if r.unknown {
			out := unknownWord(raw, r.split)
			_, out.FD = w.Parts[0].(*syntax.ProcSubst)
			out.FD = out.FD && len(w.Parts) == 1
			return out
		}
	}
	if braceExpands(r.skeleton.String()) {
		return unknownWord(raw, true)
	}
	out := Word{Raw: raw, Tilde: r.tilde, eqTilde: r.eqTilde}
	if r.glob {
		out.Value, out.Glob = r.pattern.String(), true
		return out
	}
	out.Value, out.Known = r.value.String(), true
	return out
}

// wordText is the word as written in src, when src is what was parsed.
func wordText(w *syntax.Word, src string) string {
	start, end := int(w.Pos().Offset()), int(w.End().Offset())
	if start < 0 || end > len(src) || start > end {
		return ""
	}
	return src[start:end]
}

// resolver accumulates one word's parts.
type resolver struct {
	raw      string
	value    strings.Builder // after quote removal
	pattern  strings.Builder // the same, with quoted glob characters escaped
	skeleton strings.Builder // unquoted text only, quoted text as '_', for brace expansion
	glob     bool
	bracket  bool // an unquoted [ was seen: a ] after it, quoted or not, may close it
	unknown  bool
	split    bool // the unknown part is unquoted
	tilde    bool
	eqTilde  bool
}

func (r *resolver) part(part syntax.WordPart, i, n int) {
	switch p := part.(type) {
	case *syntax.Lit:
		r.lit(p.Value, i, n)
	case *syntax.SglQuoted:
		if p.Dollar {
			r.unknown = true // $'...': escapes the matcher does not decode
			return
		}
		r.quoted(p.Value)
	case *syntax.DblQuoted:
		if p.Dollar {
			r.unknown = true // $"...": translated at run time
			return
		}
		for _, inner := range p.Parts {
			lit, ok := inner.(*syntax.Lit)
			if !ok {
				r.unknown, r.split = true, splitsInQuotes(inner)
				return
			}
			r.quoted(unescapeDouble(lit.Value))
		}
	case *syntax.ProcSubst:
		r.unknown = true // one word, a /dev/fd path
	default: // $x, $(...), $((...)), extended globs
		r.unknown, r.split = true, true
	}
}

// splitsInQuotes reports whether an expansion inside double quotes may still
// become several words: "$@", "${a[@]}".
func splitsInQuotes(p syntax.WordPart) bool {
	pe, ok := p.(*syntax.ParamExp)
	if !ok {
		return false
	}
	if pe.Param != nil && pe.Param.Value == "@" {
		return true
	}
	if idx, ok := pe.Index.(*syntax.Word); ok && (idx.Lit() == "@" || idx.Lit() == "*") {
		return true
	}
	return pe.Names != 0
}

func (r *resolver) quoted(s string) {
	if r.bracket && strings.IndexByte(s, ']') >= 0 {
		r.glob = true // [ unquoted, ] quoted: bash's pattern is a bracket expression all the same
	}
	r.value.WriteString(s)
	for i := 0; i < len(s); i++ {
		if strings.IndexByte("*?[\\", s[i]) >= 0 || s[i] == ']' && r.bracket {
			r.pattern.WriteByte('\\')
		}
		r.pattern.WriteByte(s[i])
	}
	r.skeleton.WriteString(strings.Repeat("_", len(s)))
}

// lit adds an unquoted literal: backslashes escape, globs are patterns, and a
// leading ~ may expand.
func (r *resolver) lit(s string, i, n int) {
	if i == 0 && strings.HasPrefix(s, "~") {
		if !r.tildePrefix(s, n) {
			r.unknown, r.split = true, true
			return
		}
	}
	if i == 0 && !r.tilde {
		r.assignmentTilde(s, n)
	}
	for j := 0; j < len(s); j++ {
		c := s[j]
		switch c {
		case '\\':
			j++
			if j < len(s) && s[j] != '\n' {
				r.quoted(s[j : j+1])
			}
			continue
		case '*', '?':
			r.glob = true
		case '[':
			r.bracket = true
			if strings.IndexByte(s[j+1:], ']') >= 0 {
				r.glob = true // a bracket expression
			}
		case ']':
			if r.bracket {
				r.glob = true // closes a [ of an earlier part: .en["v"]
			}
		}
		r.value.WriteByte(c)
		r.pattern.WriteByte(c)
		r.skeleton.WriteByte(c)
	}
}

// tildePrefix handles a word that starts with ~: "~" and "~/..." expand to
// the home directory (tilde is set); "~user", "~+" and "~-" are only known
// at run time (false). A tilde prefix with quoted characters does not
// expand and stays a literal ~.
func (r *resolver) tildePrefix(s string, n int) bool {
	prefix, _, slash := strings.Cut(s, "/")
	if !slash && n > 1 {
		return true // ~"x": quoted characters in the prefix, a literal ~
	}
	if prefix == "~" {
		r.tilde = true
		return true
	}
	return false
}

// assignmentTilde notes bash's expansion of ~ after the = of a word that
// looks like an assignment (a=~/x), even as an argument.
func (r *resolver) assignmentTilde(s string, n int) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || !isName(name) || !strings.HasPrefix(rest, "~") {
		return
	}
	prefix, _, slash := strings.Cut(rest, "/")
	switch {
	case !slash && n > 1:
	case prefix == "~":
		r.eqTilde = true
	default:
		r.unknown, r.split = true, true
	}
}

// isName reports whether s is a shell variable name.
func isName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// braceExpands reports whether unquoted text may contain a brace expansion
// such as {rm,-rf} or {1..3}; "{}" alone (find -exec) is literal.
func braceExpands(s string) bool {
	open := strings.IndexByte(s, '{')
	if open < 0 {
		return false
	}
	inner := s[open:]
	end := strings.IndexByte(inner, '}')
	if end < 0 {
		return false
	}
	return strings.ContainsAny(inner[:end], ",") || strings.Contains(inner[:end], "..") || braceExpands(inner[end:])
}
