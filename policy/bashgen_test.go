package policy

import (
	"hash/fnv"
	"math/rand/v2"
	"strings"
)

// gen builds a bash script from fuzz bytes, one byte per choice, from a
// grammar of the constructs the matcher must judge: simple commands with
// every kind of word, pipelines, lists, compound commands, arithmetic,
// tests, functions, here-documents and redirections. It uses only
// programs that are harmless in the throwaway directory.
type gen struct {
	data    []byte
	rnd     *rand.Rand // choices once data runs out, seeded by data
	b       strings.Builder
	pending []string // here-document bodies, written after the next newline
	inSubst int      // inside $(...), where a here-document body cannot wait
}

// maxGenLen is where a script stops growing: every choice then takes its
// simplest branch.
const maxGenLen = 2000

func generate(data []byte) string {
	h := fnv.New64a()
	h.Write(data)
	g := &gen{data: data, rnd: rand.New(rand.NewPCG(h.Sum64(), uint64(len(data))))}
	g.list(0)
	g.newline()
	return g.b.String()
}

// pick reads one choice in [0, n) from the bytes, then from the seeded
// generator; past maxGenLen it is 0, which every choice below takes as its
// simplest branch, so that the script ends.
func (g *gen) pick(n int) int {
	switch {
	case g.b.Len() > maxGenLen:
		return 0
	case len(g.data) == 0:
		return g.rnd.IntN(n)
	}
	c := int(g.data[0])
	g.data = g.data[1:]
	return c % n
}

func (g *gen) w(s ...string) {
	for _, x := range s {
		g.b.WriteString(x)
	}
}

func (g *gen) newline() {
	g.w("\n")
	for _, body := range g.pending {
		g.w(body, "EOF\n")
	}
	g.pending = nil
}

func (g *gen) list(depth int) {
	n := 1 + g.pick(3)
	for i := range n {
		if i > 0 {
			switch g.pick(6) {
			case 0:
				g.w("; ")
			case 1:
				g.w(" && ")
			case 2:
				g.w(" || ")
			case 3:
				g.w(" & ")
			case 4:
				g.comment()
			default:
				if g.inSubst > 0 {
					g.w("; ")
				} else {
					g.newline()
				}
			}
		}
		g.pipeline(depth)
	}
}

func (g *gen) pipeline(depth int) {
	if g.pick(8) == 1 {
		g.w("! ")
	}
	g.command(depth)
	for g.pick(4) == 1 {
		g.w([]string{" | ", " |& "}[g.pick(2)])
		g.command(depth)
	}
}

func (g *gen) command(depth int) {
	if depth < 3 && g.pick(4) == 1 {
		g.compound(depth + 1)
	} else {
		g.simple(depth)
	}
	for g.pick(3) == 1 {
		g.w(" ")
		g.redirect(depth)
	}
}

// The vocabulary: programs the allow list holds (first) and programs or
// builtins it refuses; words that are plain and words the shell expands.
var (
	genAllowed = []string{"echo", "printf", "true", "false", ":", "pwd", "cat", "ls", "wc", "head", "grep",
		"cut", "tr", "basename", "dirname", "seq", "uname", "test", "[", "cd", "pushd", "popd", "dirs", "type",
		"times", "umask", "jobs", "wait", "shift", "command", "builtin", "exec", "eval", "env", "nice",
		"timeout", "nohup", "xargs", "./tool", "sub/tool", "l\\\ns", "git log", "git diff", "sort", "uniq",
		"find"}
	genRefused = []string{"read", "mapfile", "unset", "declare", "export", "local", "set", "shopt", "hash",
		"enable", "alias", "trap", "source", ".", "let", "getopts", "compgen", "history", "fc", "/usr/bin/cat",
		"./cat", "touch", "mkdir", "tee", "sh", "bash", "id", "exit", "tou\\\nch", "ls\r", "git status"}
	genPlain = []string{"a.txt", "b.txt", "sub", "sub/c.txt", "x", "-a", "-l", "-n", "--", "/dev/null", "~",
		".", "..", "1", "-e", "-f", "'a b'", `"a b"`, "''", "\\x", "EXIT", "ls", "cat", "'echo hi'", "hi", "-s",
		"-p", "-v", "-x", "-c", "-C", "{}", "a=~/x", "--file=x", "-I{}", "-i", "touch", "'touch p'", "-u",
		"--output=o.txt", "-o", "o.txt", "--outp=o.txt", "-delete", "-fprint", "-exec", ";", "+", "--ext-diff",
		"--pre=./tool", "--compress-program=./tool", "-T", "a\\\n.txt", "x\r", "--oneline", "-c"}
	genExpanded = []string{"$'a\\nb'", "*.txt", "?.txt", "[ab].txt", "{a,b}.txt", "s*", "$X", "${X}", `"$X"`,
		`"$@"`, "$1", "${X:-y}", "${X:=y}", "${!X}", "${X@P}", "${#X}", "${X/a/b}", "'a[$(touch p)]'", "a[1]",
		"~/x", "/", "-", "$((1+2))"}
)

func (g *gen) simple(depth int) {
	if g.pick(6) == 1 {
		g.w([]string{"X=", "PATH=", "PS4=", "a[1]="}[g.pick(4)])
		g.word(depth)
		g.w(" ")
	}
	if g.pick(4) == 1 {
		g.w(genRefused[g.pick(len(genRefused))])
	} else {
		g.w(genAllowed[g.pick(len(genAllowed))])
	}
	for n := g.pick(4); n > 0; n-- {
		g.w([]string{" ", " ", " ", " \\\n"}[g.pick(4)]) // a continuation joins the words
		g.word(depth)
	}
}

// comment ends a line with a comment: bash ends it at the newline, even
// after a backslash, and a CR is a plain character to it.
func (g *gen) comment() {
	g.w([]string{" # c", " # \\", " #c\r\\", " # 'x"}[g.pick(4)])
	g.newline()
}

func (g *gen) word(depth int) {
	if depth < 3 && g.pick(8) == 1 {
		switch g.pick(5) {
		case 0:
			g.w("$(")
			g.nested(depth)
			g.w(")")
		case 1:
			g.w("`")
			g.simple(depth + 1)
			g.w("`")
		case 2:
			g.w("<(")
			g.nested(depth)
			g.w(")")
		case 3:
			g.w("$((", g.arith(), "))")
		default:
			g.w(`"$(`)
			g.nested(depth)
			g.w(`)"`)
		}
		return
	}
	if g.pick(5) == 1 {
		g.w(genExpanded[g.pick(len(genExpanded))])
		return
	}
	g.w(genPlain[g.pick(len(genPlain))])
}

func (g *gen) nested(depth int) {
	g.inSubst++
	g.list(depth + 1)
	g.inSubst--
}

func (g *gen) arith() string {
	return []string{"1+2", "x", "a[1]", "'a[$(touch p)]'", "$X", "x=3", "a[$(touch p)]"}[g.pick(7)]
}

func (g *gen) compound(depth int) {
	switch g.pick(14) {
	case 0:
		g.w("( ")
		g.list(depth)
		g.w(" )")
	case 1:
		g.w("{ ")
		g.list(depth)
		g.w("; }")
	case 2:
		g.w("if ")
		g.list(depth)
		g.w("; then ")
		g.list(depth)
		g.w("; else ")
		g.list(depth)
		g.w("; fi")
	case 3:
		g.w([]string{"while false", "until true"}[g.pick(2)], "; do ")
		g.list(depth)
		g.w("; done")
	case 4:
		g.w("for v in ")
		g.word(depth)
		g.w(" ")
		g.word(depth)
		g.w("; do ")
		g.list(depth)
		g.w("; done")
	default:
		g.compound2(depth)
	}
}

func (g *gen) compound2(depth int) {
	switch g.pick(9) {
	case 0:
		g.w("case ")
		g.word(depth)
		g.w(" in a|b) ")
		g.list(depth)
		g.w(";; *) ")
		g.list(depth)
		g.w(";; esac")
	case 1:
		g.w("f() { ")
		g.list(depth)
		g.w("; }; f")
	case 2:
		g.w("coproc ")
		g.simple(depth)
	case 3:
		g.w("let ", g.arith())
	case 4:
		g.w("(( ", g.arith(), " ))")
	case 5:
		g.w("[[ ", []string{"-f a.txt", "x == y", "'a[$(touch p)]' -eq 0", "-v 'a[$(touch p)]'", "$X -lt 1"}[g.pick(5)], " ]]")
	case 6:
		g.w("time ")
		g.pipeline(depth)
	case 7:
		g.w("for ((i=0; i<", g.arith(), "; i++)); do ")
		g.list(depth)
		g.w("; done")
	default:
		g.w("select v in a b; do break; done")
	}
}

var genTargets = []string{"out.txt", "/dev/null", "a.txt", "sub/o", "~/o", "$X", "/dev/stderr", "/dev/tcp/127.0.0.1/9"}

func (g *gen) redirect(depth int) {
	target := func() string { return genTargets[g.pick(len(genTargets))] }
	switch g.pick(16) {
	case 0, 1:
		g.w("> ", target())
	case 2:
		g.w(">> ", target())
	case 3:
		g.w("2>&1")
	case 4:
		g.w(">&2")
	case 5:
		g.w(">&", target())
	case 6:
		g.w("1>&", target())
	case 7:
		g.w("&> ", target())
	case 8:
		g.w("< a.txt")
	case 9:
		g.w("<<< ")
		g.word(depth)
	case 10:
		g.w("<> ", target())
	case 11:
		g.w("{fd}> ", target())
	case 12:
		g.w("3>/dev/null")
	case 13:
		g.w("< ", target())
	default:
		g.heredoc(depth)
	}
}

func (g *gen) heredoc(depth int) {
	if g.inSubst > 0 {
		g.w("2>/dev/null")
		return
	}
	g.w([]string{"<<'EOF'", "<<EOF", `<<"EOF"`, `<<E\OF`, "<<-EOF", "<<-'EOF'"}[g.pick(6)])
	// Bodies whose lines may end the here-document early in bash: a
	// delimiter split by a backslash-newline, one after a tab (<<-), or
	// with a CR.
	body := []string{"hello\n", "$X\n", "$(touch p)\n", "rm x\n", "ls; cat a.txt\n", "`id`\n",
		"EO\\\nF\ntouch p\n", "\\\nEOF\ntouch p\n", "\tEOF\ntouch p\n", "EOF\r\ntouch p\n", "x\\\n"}[g.pick(11)]
	g.pending = append(g.pending, body)
}
