package policy

import (
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"mvdan.cc/sh/v3/syntax"
)

// commandOp matches a shell command line against argv prefixes such as
// [["git","push"], ["rm"]], after parsing it with a real shell parser.
//
// A deny or ask rule matches when ANY simple command of the script matches
// a prefix, looking through wrappers (sudo rm, xargs rm, /bin/rm, ...) and
// into nested scripts (bash -c '...', eval '...', $(...), subshells). An
// allow rule matches only when EVERY simple command matches a prefix exactly
// as written, with no wrapper, no assignment and no redirection to a file.
// A script that does not parse, or a word whose value is only known at run
// time ($VAR, globs, brace expansion), counts as a match for deny and ask
// and as a miss for allow.
type commandOp struct {
	prefixes [][]string
	effect   api.Effect
}

func (op commandOp) match(v gjson.Result, ev *evalCtx) bool {
	if v.Type != gjson.String {
		return false
	}
	s := ev.script(v.Str)
	if op.effect == api.EffectAllow {
		return op.allows(s)
	}
	if !s.parsed {
		return true
	}
	for _, cmd := range s.commands {
		for _, argv := range cmd.cands {
			if matchPrefixes(op.prefixes, argv, true) {
				return true
			}
		}
	}
	return false
}

func (op commandOp) allows(s *script) bool {
	if !s.parsed || s.writesFile || len(s.commands) == 0 {
		return false
	}
	for _, cmd := range s.commands {
		if cmd.assigns || !matchPrefixes(op.prefixes, cmd.argv, false) {
			return false
		}
	}
	return true
}

// matchPrefixes reports whether argv starts with one of the prefixes. A word
// whose value is unknown matches any prefix word when unknownMatches is set
// (deny, ask) and none otherwise (allow).
func matchPrefixes(prefixes [][]string, argv []word, unknownMatches bool) bool {
next:
	for _, p := range prefixes {
		if len(argv) < len(p) {
			continue
		}
		for i, want := range p {
			w := argv[i]
			if !w.known {
				if unknownMatches {
					continue
				}
				continue next
			}
			if w.s != want {
				continue next
			}
		}
		return true
	}
	return false
}

// script is a parsed command line.
type script struct {
	parsed     bool // false: the parser rejected it, or it nests too deeply
	writesFile bool // a redirection writes to a file
	commands   []simpleCommand
}

// simpleCommand is one command the shell would run.
type simpleCommand struct {
	argv    []word
	assigns bool     // VAR=value before the command, or a bare assignment
	cands   [][]word // candidates(), computed once
}

// word is a shell word after quote removal, when its value is static.
type word struct {
	s     string
	known bool
}

func (ev *evalCtx) script(src string) *script {
	if s, ok := ev.scripts[src]; ok {
		return s
	}
	if ev.scripts == nil {
		ev.scripts = map[string]*script{}
	}
	s := parseScript(src)
	ev.scripts[src] = s
	return s
}

// maxNesting bounds bash -c inside bash -c: deeper scripts are not understood.
const maxNesting = 8

func parseScript(src string) *script {
	s := &script{parsed: true}
	s.add(src, 0)
	return s
}

func (s *script) add(src string, depth int) {
	if depth > maxNesting {
		s.parsed = false
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		s.parsed = false
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			for _, r := range n.Redirs {
				if writesToFile(r) {
					s.writesFile = true
				}
			}
		case *syntax.CallExpr:
			s.addCall(n, depth)
		case *syntax.DeclClause:
			cmd := simpleCommand{argv: []word{{n.Variant.Value, true}}, assigns: true}
			cmd.cands = cmd.candidates()
			s.commands = append(s.commands, cmd)
		}
		return true
	})
}

func (s *script) addCall(call *syntax.CallExpr, depth int) {
	cmd := simpleCommand{assigns: len(call.Assigns) > 0}
	for _, w := range call.Args {
		cmd.argv = append(cmd.argv, literal(w))
	}
	cmd.cands = cmd.candidates()
	s.commands = append(s.commands, cmd)
	for _, argv := range cmd.cands {
		if nested, ok := nestedScript(argv); ok {
			if !nested.known {
				s.parsed = false
				continue
			}
			s.add(nested.s, depth+1)
		}
		if inner := findExec(argv); inner != nil {
			found := simpleCommand{argv: inner}
			found.cands = found.candidates()
			s.commands = append(s.commands, found)
		}
	}
}

// writesToFile reports whether a redirection may write to a file other
// than the standard streams or /dev/null.
func writesToFile(r *syntax.Redirect) bool {
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.AppAll, syntax.RdrInOut:
	default:
		return false
	}
	target := literal(r.Word)
	switch target.s {
	case "/dev/null", "/dev/stdout", "/dev/stderr":
		return !target.known
	}
	return true
}

// literal returns a word's value after quote removal when it is static. A
// word with expansions ($x, $(...), globs, braces, $'...') is unknown.
func literal(w *syntax.Word) word {
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if !unquoted(&b, p.Value) {
				return word{}
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return word{}
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return word{}
			}
			for _, inner := range p.Parts {
				lit, ok := inner.(*syntax.Lit)
				if !ok {
					return word{}
				}
				b.WriteString(unescapeDouble(lit.Value))
			}
		default:
			return word{}
		}
	}
	return word{b.String(), true}
}

// unquoted appends an unquoted literal after backslash removal and reports
// false when it contains glob or brace expansion that would change it.
func unquoted(b *strings.Builder, s string) bool {
	if braceExpands(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			i++
			if i < len(s) && s[i] != '\n' {
				b.WriteByte(s[i])
			}
			continue
		case '*', '?':
			return false
		case '[':
			if strings.IndexByte(s[i+1:], ']') >= 0 {
				return false // a bracket expression: the shell may expand it
			}
		}
		b.WriteByte(c)
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

// braceExpands reports whether s may contain a brace expansion such as
// {rm,-rf} or {1..3}; "{}" alone (find -exec) is literal.
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
