package bash

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxCandidates bounds the readings of one command through its wrappers.
const maxCandidates = 16

// codeVars hold code the shell runs later (PS4 with set -x, BASH_ENV for
// every non-interactive bash): assigning one makes what runs unknown.
var codeVars = map[string]bool{"PS0": true, "PS1": true, "PS2": true, "PS3": true, "PS4": true,
	"PROMPT_COMMAND": true, "BASH_ENV": true, "ENV": true}

// call records one simple command and everything it runs.
func (w *walker) call(c *syntax.CallExpr, st *syntax.Stmt) {
	var cmd Command
	for _, a := range c.Assigns {
		w.s.setUnsound(fmt.Sprintf("assignment %s changes what the command runs with", w.text(a)))
		cmd.Assigns = append(cmd.Assigns, w.assign(a))
	}
	cmd.Argv = w.words(c.Args, make([]Word, 0, len(c.Args)))
	w.addCommand(cmd, st)
}

// words resolves the words of a command, appending them to argv.
func (w *walker) words(args []*syntax.Word, argv []Word) []Word {
	for _, a := range args {
		v := w.word(a)
		switch {
		case !v.Known:
			w.s.setUnsound(fmt.Sprintf("word %s is only known at run time", v.Raw))
		case strings.Contains(v.Value, "CDPATH") || strings.Contains(v.Value, "cdable_vars"):
			w.cdpath = true
		}
		argv = append(argv, v)
	}
	return argv
}

// addCommand records a simple command and what it runs.
func (w *walker) addCommand(cmd Command, st *syntax.Stmt) {
	if len(cmd.Argv) > 0 {
		cmd.Cands = w.candidates(cmd.Argv, st)
	}
	w.s.Commands = append(w.s.Commands, cmd)
}

// text is a node as written.
func (w *walker) text(n syntax.Node) string {
	start, end := int(n.Pos().Offset()), int(n.End().Offset())
	if start < 0 || end > len(w.src) || start > end {
		return "?"
	}
	return w.src[start:end]
}

// candidates returns the command and, in turn, what each wrapper in it
// runs: sudo -u x nice rm f is [sudo -u x nice rm f], [nice rm f], [rm f].
func (w *walker) candidates(argv []Word, st *syntax.Stmt) []Candidate {
	cands := []Candidate{{Argv: argv}}
	for i := 0; i < len(cands); i++ {
		if len(cands) > maxCandidates {
			w.s.setUnknown(fmt.Sprintf("%s has too many readings through its wrappers", argv[0].Raw))
			break
		}
		cands = append(cands, w.inspect(cands[i], st)...)
	}
	return cands
}

// inspect looks at one program and its arguments: what a wrapper or a
// builtin runs in turn, what an interpreter runs, where it changes
// directory.
func (w *walker) inspect(c Candidate, st *syntax.Stmt) []Candidate {
	prog := c.Argv[0]
	if !prog.Known {
		return nil
	}
	name := prog.Value
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	} else if next, ok := w.builtin(name, c); ok {
		return next
	}
	if why, ok := AlwaysUnknown[name]; ok {
		w.s.setUnknown(why)
		return nil
	}
	if wr, ok := wrappers[name]; ok {
		return w.wrap(name, wr, c)
	}
	switch {
	case name == "runuser":
		return w.runuser(c)
	case bashShells[name]:
		return w.shell(name, c, st)
	case otherShells[name]:
		return w.interpret(name, interpreter{}, c)
	case name == "awk" || name == "gawk" || name == "mawk" || name == "nawk":
		w.awk(name, c)
	case name == "find":
		return w.find(c)
	case name == "git":
		return w.git(c)
	case name == "watch":
		return w.watch(c)
	case name == "make" || name == "tar":
		w.chdirOption(c.Argv[1:])
	default:
		if in, ok := interpreterFor(name); ok {
			return w.interpret(name, in, c)
		}
	}
	return nil
}

// wrap returns what a wrapper runs, under each reading of its arguments.
func (w *walker) wrap(name string, wr wrapper, c Candidate) []Candidate {
	var out []Candidate
	for _, r := range wr.strip(name, c.Argv[1:]) {
		if r.unknown != "" {
			w.s.setUnknown(r.unknown)
			continue
		}
		for _, d := range r.chdir {
			w.cd(d)
		}
		w.s.rootMoved = w.s.rootMoved || r.root
		if len(r.argv) > 0 {
			out = append(out, Candidate{Argv: r.argv, StdinArgs: wr.stdinArgs || c.StdinArgs})
		}
	}
	if wr.assigns {
		w.envAssigns(name, c.Argv[1:])
	}
	switch {
	case name == "exec" && len(out) == 0:
		w.s.setUnsound("`exec` without a command changes the shell's own files")
	case name == "xargs":
		replaceWords(out, xargsReplace(c.Argv[1:]))
	case name == "chroot":
		w.s.rootMoved = true
	}
	return out
}

// envAssigns checks the NAME=value words env and sudo put in the
// command's environment.
func (w *walker) envAssigns(name string, args []Word) {
	for _, a := range args {
		if !a.Known {
			continue
		}
		if n, _, ok := strings.Cut(a.Value, "="); ok && codeVars[n] {
			w.s.setUnknown(fmt.Sprintf("%s sets %s, which holds code the shell runs later", name, n))
		}
	}
}

// runuser runs its command like a wrapper with -u USER; otherwise, like su,
// it hands it to a shell.
func (w *walker) runuser(c Candidate) []Candidate {
	for _, a := range c.Argv[1:] {
		if a.Known && (a.Value == "-u" || a.Value == "--user" || strings.HasPrefix(a.Value, "--user=")) {
			return w.wrap("runuser", runuserWrapper, c)
		}
	}
	w.s.setUnknown("runuser without -u hands its command to a shell")
	return nil
}

// xargsReplace is the string xargs -I replaces with each input item, or "".
func xargsReplace(args []Word) string {
	for i, a := range args {
		switch {
		case !a.Known:
		case a.Value == "-I" && i+1 < len(args):
			return args[i+1].Value
		case a.Value == "-i" || a.Value == "--replace":
			return "{}"
		case strings.HasPrefix(a.Value, "-I") || strings.HasPrefix(a.Value, "-i"):
			return a.Value[2:]
		case strings.HasPrefix(a.Value, "--replace="):
			return a.Value[len("--replace="):]
		}
	}
	return ""
}

// replaceWords makes every word that holds a placeholder (xargs -I {},
// find -exec {}) unknown: the program fills it in.
func replaceWords(cands []Candidate, placeholder string) {
	if placeholder == "" {
		return
	}
	for i, c := range cands {
		argv := make([]Word, len(c.Argv))
		for j, a := range c.Argv {
			argv[j] = a
			if a.Known && strings.Contains(a.Value, placeholder) {
				argv[j] = unknownWord(a.Raw, false)
			}
		}
		cands[i].Argv = argv
	}
}

// assign walks one NAME=value (or NAME[i]=value, NAME=(...)) and returns
// its value.
func (w *walker) assign(a *syntax.Assign) Word {
	if a.Name != nil {
		if codeVars[a.Name.Value] {
			w.s.setUnknown(a.Name.Value + " holds code the shell runs later")
		}
		w.cdpath = w.cdpath || a.Name.Value == "CDPATH"
	}
	if a.Index != nil {
		w.arith(a.Index)
	}
	if a.Array != nil {
		w.setsStrings = true
		for _, e := range a.Array.Elems {
			if e.Index != nil {
				w.arith(e.Index)
			}
			if e.Value != nil {
				w.word(e.Value)
			}
		}
	}
	if a.Value == nil {
		return Word{}
	}
	v := w.word(a.Value)
	if a.Append || !(v.Known && isNumber(v.Value) || arithmeticOnly(a.Value)) {
		w.setsStrings = true
	}
	return v
}

// arithmeticOnly reports whether a word is one $((...)), whose value is a
// number.
func arithmeticOnly(wd *syntax.Word) bool {
	if len(wd.Parts) != 1 {
		return false
	}
	part := wd.Parts[0]
	if dq, ok := part.(*syntax.DblQuoted); ok && len(dq.Parts) == 1 {
		part = dq.Parts[0]
	}
	_, ok := part.(*syntax.ArithmExp)
	return ok
}
