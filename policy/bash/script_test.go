package bash

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzParse feeds arbitrary shell text to the walk: it never fails on a
// script (a panic would be recovered as "the matcher failed", and the
// script be unknown), whatever the parser makes of it.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"git status && rm -rf /", "echo hi", "echo $(rm x)", "bash -c 'echo x; rm y'", "sudo -u r rm x",
		"echo a | xargs rm", "find . -exec rm {} \\;", "eval 'echo; rm'", "{rm,x}", "r\\m x", "echo > f",
		"f() { rm x; }; echo", "echo <(rm x)", "X=1 echo", "echo 'unterminated", "((x=1)) && echo", "echo\nrm x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, command string) {
		if s := Parse(command, "/p", "/h"); strings.HasPrefix(s.Unknown, matcherFailed) {
			t.Fatalf("%q: %s", command, s.Unknown)
		}
	})
}

// The matcher's walk refuses a node type it does not know, such as one a
// newer parser adds: allow misses, deny and ask match.
func TestUnknownNodeType(t *testing.T) {
	s := &Script{}
	w := &walker{s: s}
	w.command(&syntaxTestDecl, nil)
	if s.Unknown == "" || s.Unsound == "" || !strings.Contains(s.Unknown, "TestDecl") {
		t.Errorf("unknown node: unknown=%q unsound=%q", s.Unknown, s.Unsound)
	}
}

var syntaxTestDecl = syntax.TestDecl{Body: &syntax.Stmt{}}
