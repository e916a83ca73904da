package bash

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// bashShells run scripts the matcher parses: their -c script, or a
// here-document or here-string on standard input, is looked into.
var bashShells = map[string]bool{"sh": true, "bash": true, "dash": true, "ash": true, "rbash": true}

// otherShells run scripts in a language the matcher does not parse: a -c
// script or standard input makes what they run unknown.
var otherShells = map[string]bool{"zsh": true, "ksh": true, "ksh93": true, "mksh": true, "pdksh": true,
	"oksh": true, "yash": true, "posh": true, "fish": true, "csh": true, "tcsh": true, "pwsh": true,
	"nu": true, "elvish": true, "xonsh": true}

// interpreter is a program that runs a script named by its first operand,
// or given inline or on standard input. Only the first case is not unknown:
// a script file, like a Makefile, is not looked into.
type interpreter struct {
	harmless  []string // options that neither hold code nor read it
	valueOpts []string // harmless options that take the next word as their value
	module    []string // options naming a module to run, like a script file (python -m)
	subcmd    []string // a first operand that comes before the script (deno run)
	version   string   // the short option that prints the version and exits (node -v)
}

var python = interpreter{harmless: []string{"-b", "-bb", "-B", "-d", "-E", "-I", "-O", "-OO", "-P", "-q",
	"-R", "-s", "-S", "-u", "-v", "-x"}, valueOpts: []string{"-W", "-X"}, module: []string{"-m"}, version: "-V"}

var interpreters = map[string]interpreter{
	"python": python, "python2": python, "python3": python, "pypy": python, "pypy3": python,
	"perl": {harmless: []string{"-w", "-W", "-X", "-T", "-t", "-c"}},
	"ruby": {harmless: []string{"-w", "-W"}},
	"node": {version: "-v"}, "nodejs": {version: "-v"}, "deno": {subcmd: []string{"run"}}, "bun": {subcmd: []string{"run"}},
	"php": {}, "lua": {}, "luajit": {}, "tclsh": {}, "wish": {}, "Rscript": {}, "julia": {}, "expect": {},
}

// AlwaysUnknown run commands the matcher cannot see whatever their
// arguments: su and script hand them to a shell, parallel builds them.
var AlwaysUnknown = map[string]string{
	"su":       "su hands its command to the user's shell",
	"sg":       "sg hands its command to a shell",
	"newgrp":   "newgrp starts a shell reading standard input",
	"script":   "script hands its command to a shell",
	"parallel": "parallel builds the commands it runs from its input",
}

// interpreterFor finds the interpreter a program name stands for:
// python3.12 is python.
func interpreterFor(name string) (interpreter, bool) {
	if in, ok := interpreters[name]; ok {
		return in, true
	}
	base := strings.TrimRight(name, "0123456789.")
	if base != name && (base == "python" || base == "pypy" || base == "lua" || base == "php" || base == "perl" || base == "ruby") {
		return interpreters[base], true
	}
	return interpreter{}, false
}

// interpret looks at what an interpreter runs: a script file is not looked
// into; an inline script, standard input or an option it does not know
// makes what runs unknown.
func (w *walker) interpret(name string, in interpreter, c Candidate) []Candidate {
	args := c.Argv[1:]
	if len(args) == 1 && args[0].Known && (args[0].Value == "--version" || args[0].Value == "--help" || args[0].Value == in.version && in.version != "") {
		return nil // prints and exits: runs no script
	}
	if len(args) > 0 && args[0].Known && slices.Contains(in.subcmd, args[0].Value) {
		args = args[1:]
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case !a.Known:
			w.s.setUnknown(name + " runs a script named by " + a.Raw + ", only known at run time")
			return nil
		case a.Value == "-" || a.Value == "--" && i+1 == len(args):
			w.s.setUnknown(name + " reads its script from standard input")
			return nil
		case a.Value == "--":
			return scriptFile(args[i+1:])
		case slices.Contains(in.module, a.Value):
			return nil // a module: like a script file
		case slices.Contains(in.valueOpts, a.Value):
			i++
		case slices.Contains(in.harmless, a.Value) || len(a.Value) > 2 && slices.Contains(in.valueOpts, a.Value[:2]):
		case strings.HasPrefix(a.Value, "-"):
			w.s.setUnknown(name + " " + a.Value + " runs code the matcher cannot see")
			return nil
		default:
			return scriptFile(args[i:])
		}
	}
	w.s.setUnknown(name + " reads its script from standard input")
	return nil
}

// scriptFile is the script an interpreter runs, as a program with its
// arguments: the matcher does not look into the file.
func scriptFile(args []Word) []Candidate {
	return []Candidate{{Argv: args, ScriptFile: true}}
}

// shell looks into what sh/bash run: the script of -c, or a here-document
// on standard input. Options that change what runs (-s, -O, --rcfile,
// options after -c, --) make it unknown.
func (w *walker) shell(name string, c Candidate, st *syntax.Stmt) []Candidate {
	args := c.Argv[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case !a.Known:
			w.s.setUnknown(name + " gets arguments only known at run time: " + a.Raw)
			return nil
		case a.Value == "-o" || a.Value == "+o":
			i++
		case len(a.Value) < 2 || a.Value[0] != '-' && a.Value[0] != '+':
			return w.shellFile(name, c, args[i:])
		case shellOption(a.Value) != "":
			w.s.setUnknown(name + " " + a.Value + shellOption(a.Value))
			return nil
		case strings.HasPrefix(a.Value, "--"):
		case strings.IndexByte(a.Value, 'c') > 0:
			w.shellScript(name, args[i+1:])
			return nil
		case strings.HasSuffix(a.Value, "o"):
			i++ // -eo pipefail
		}
	}
	if c.StdinArgs {
		w.s.setUnknown(name + " runs a script file named by its input")
		return nil
	}
	text, ok := w.stdinText(st)
	if !ok {
		w.s.setUnknown(name + " reads its script from standard input")
		return nil
	}
	w.parse(text, name+" reading a here-document")
	return nil
}

// shellFile is a shell's first operand: a script file, or - for
// standard input.
func (w *walker) shellFile(name string, c Candidate, args []Word) []Candidate {
	switch {
	case args[0].Value == "-":
		w.s.setUnknown(name + " - reads its script from standard input")
		return nil
	case c.StdinArgs:
		w.s.setUnknown(name + " runs a script file named by its input")
	}
	return scriptFile(args)
}

var shellLongOpts = []string{"--login", "--norc", "--noprofile", "--posix", "--restricted", "--verbose",
	"--noediting", "--version", "--help"}

// shellOption says why an option makes a shell's script unknown, or "".
func shellOption(s string) string {
	if strings.HasPrefix(s, "--") {
		if slices.Contains(shellLongOpts, s) {
			return ""
		}
		return ": the matcher cannot see what it runs"
	}
	for i, c := range s[1:] {
		switch {
		case c == 'o' && (i != len(s)-2 || strings.ContainsRune(s, 'c')):
			return " mixes -o with other options the matcher does not follow"
		case c == 's':
			return " reads its script from standard input"
		case c == 'O':
			return " sets a shell option the matcher does not follow"
		case !strings.ContainsRune("abcefhikmnoprtuvxBCDEHPT", c):
			return ": an option the matcher does not know"
		}
	}
	return ""
}

// shellScript handles the words after -c: the script, then $0, $1...
func (w *walker) shellScript(name string, rest []Word) {
	if len(rest) == 0 {
		w.s.setUnknown(name + " -c has no script")
		return
	}
	if rest[0].Known && rest[0].Value != "" && (rest[0].Value[0] == '-' || rest[0].Value[0] == '+') {
		w.s.setUnknown(name + " -c " + rest[0].Value + ": options after -c hide which word is the script")
		return
	}
	if len(rest) > 1 {
		w.setsStrings = true // the script's positional parameters
	}
	w.nested(rest[0], name+" -c")
}

// nested looks into a script given as a word (bash -c, eval, trap, watch).
func (w *walker) nested(script Word, what string) {
	if !script.Known {
		w.s.setUnknown(what + " runs a script only known at run time: " + script.Raw)
		return
	}
	w.parse(script.Value, what)
}

// awk's program can run commands with system(), pipes and extensions.
func (w *walker) awk(name string, c Candidate) {
	args := c.Argv[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case !a.Known:
			w.s.setUnknown(name + " gets arguments only known at run time: " + a.Raw)
			return
		case a.Value == "-F" || a.Value == "-v":
			i++
		case strings.HasPrefix(a.Value, "-F") || strings.HasPrefix(a.Value, "-v"):
		case a.Value == "-f" || strings.HasPrefix(a.Value, "--file"):
			return // a program file: not looked into
		case a.Value == "--":
			if i+1 < len(args) {
				w.awkProgram(name, args[i+1])
			}
			return
		case strings.HasPrefix(a.Value, "-"):
			w.s.setUnknown(name + " " + a.Value + ": an option the matcher does not know")
			return
		default:
			w.awkProgram(name, a)
			return
		}
	}
}

func (w *walker) awkProgram(name string, prog Word) {
	if !prog.Known {
		w.s.setUnknown(name + " runs a program only known at run time")
		return
	}
	if strings.Contains(prog.Value, "system") || strings.ContainsAny(prog.Value, "|@") {
		w.s.setUnknown(name + "'s program can run commands (system, |, @load)")
	}
}
