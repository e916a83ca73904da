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
		"case $x in a) rm y;; esac", "coproc rm x", "[[ -f x && $(rm y) ]]", "echo $((x[$(rm y)]))",
		"cat <<EOF\n$(rm x)\nEOF\n", "select x in a; do rm $x; done", "trap 'rm x' EXIT", "a=(1 2); ${a[@]}",
		"time -p rm x", "! { rm x; } | tee y", "ls # \\\nrm x",
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
