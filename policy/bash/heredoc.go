package bash

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// heredocText is the text a here-document feeds to a command, when static.
func heredocText(r *syntax.Redirect) (string, bool) {
	quoted := false
	for _, p := range r.Word.Parts {
		if _, lit := p.(*syntax.Lit); !lit {
			quoted = true
		}
	}
	if strings.ContainsAny(r.Word.Lit(), `\`) {
		quoted = true
	}
	var b strings.Builder
	if r.Hdoc != nil {
		for _, p := range r.Hdoc.Parts {
			lit, ok := p.(*syntax.Lit)
			if !ok {
				return "", false
			}
			if quoted {
				b.WriteString(lit.Value)
			} else {
				b.WriteString(unescapeHeredoc(lit.Value))
			}
		}
	}
	text := b.String()
	if r.Op == syntax.DashHdoc {
		lines := strings.Split(text, "\n")
		for i, l := range lines {
			lines[i] = strings.TrimLeft(l, "\t")
		}
		text = strings.Join(lines, "\n")
	}
	return text, true
}

// unescapeHeredoc removes the backslashes an unquoted here-document honours.
func unescapeHeredoc(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\\\n", s[i+1]) >= 0 {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// stdinText is what a statement's last redirection of standard input
// feeds it, when that is a here-document or here-string the matcher can
// read.
func (w *walker) stdinText(st *syntax.Stmt) (string, bool) {
	var last *syntax.Redirect
	for _, r := range st.Redirs {
		if r.N != nil && r.N.Value != "0" {
			continue
		}
		switch r.Op {
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			last = r
		}
	}
	switch {
	case last == nil:
		return "", false
	case last.Op == syntax.WordHdoc:
		v := resolve(last.Word, w.src)
		return v.Value + "\n", v.Known
	case last.Op == syntax.Hdoc || last.Op == syntax.DashHdoc:
		return heredocText(last)
	}
	return "", false
}
