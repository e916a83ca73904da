package bash

import (
	"fmt"
	"strings"
)

// builtin handles a bare program name that bash runs as a builtin: what it
// runs in turn, and what the allow side must refuse. ok is false for a
// name the matcher does not treat specially (echo, pwd, ls ...).
func (w *walker) builtin(name string, c Candidate) (next []Candidate, ok bool) {
	args := c.Argv[1:]
	switch name {
	case "cd", "pushd":
		w.cdArgs(name, args)
	case "source", ".":
		w.s.setUnknown("`" + name + "` runs a file in this shell, which the matcher cannot see")
	case "eval":
		w.nested(joinWords(args), "eval")
	case "trap":
		w.trap(args)
	case "alias", "unalias":
		w.alias(name, args)
	case "jobs":
		if len(args) > 1 && args[0].Known && args[0].Value == "-x" {
			return []Candidate{{Argv: args[1:]}}, true
		}
	case "let":
		w.s.setUnknown("`let` evaluates arithmetic that can run commands")
	case "read", "unset", "mapfile", "readarray", "getopts", "declare", "typeset", "local", "export", "readonly":
		w.s.setUnsound("`" + name + "` sets shell variables")
		w.setsStrings = true
		w.names(name, args)
	case "printf", "test", "[", "wait":
		w.optionNames(name, args)
	case "set", "shopt":
		w.s.setUnsound("`" + name + "` changes how the shell runs what follows")
		w.setsStrings = w.setsStrings || name == "set" && len(args) > 0
	case "enable", "hash", "fc", "history", "bind", "complete", "compgen", "compopt":
		w.shellState(name, args)
	default:
		return nil, false
	}
	return nil, true
}

// joinWords is what eval runs: its arguments joined by spaces.
func joinWords(args []Word) Word {
	parts := make([]string, len(args))
	raws := make([]string, len(args))
	for i, a := range args {
		if !a.Known {
			return unknownWord(a.Raw, true)
		}
		parts[i], raws[i] = a.Value, a.Raw
	}
	w := Literal(strings.Join(parts, " "))
	w.Raw = strings.Join(raws, " ")
	return w
}

// trap ACTION SIGNAL... runs ACTION later, perhaps many times.
func (w *walker) trap(args []Word) {
	w.s.setUnsound("`trap` sets a script to run later")
	if len(args) > 0 && args[0].Known && args[0].Value == "--" {
		args = args[1:]
	}
	if len(args) < 2 || args[0].Known && (args[0].Value == "-" || args[0].Value == "" || strings.HasPrefix(args[0].Value, "-")) {
		return // trap, trap -p, trap SIGNAL, trap - SIGNAL: nothing new runs
	}
	w.loop++
	w.nested(args[0], "trap")
	w.loop--
}

// alias NAME=VALUE makes NAME mean something else in what follows.
func (w *walker) alias(name string, args []Word) {
	why := "`" + name + "` changes what later commands mean"
	w.s.setUnsound(why)
	for _, a := range args {
		if !a.Known || strings.Contains(a.Value, "=") {
			w.s.setUnknown(why)
		}
	}
}

// nameValueOpts are the short options of variable-setting builtins that
// take a value that is not a variable name.
var nameValueOpts = map[string]string{"read": "dinNptu", "mapfile": "dnOsuc", "readarray": "dnOsuc"}

// names checks the variable names a builtin sets: bash evaluates a
// subscript (a[$(cmd)]) as arithmetic, which can run commands.
func (w *walker) names(name string, args []Word) {
	skip := name == "getopts" // its first operand is the option string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case !a.Known:
			w.evalsVars = true
		case (name == "mapfile" || name == "readarray") && strings.HasPrefix(a.Value, "-C"):
			w.s.setUnknown("`" + name + " -C` runs a callback the matcher cannot see")
		case strings.HasPrefix(a.Value, "-") && len(a.Value) > 1 && !skip:
			if strings.ContainsAny(a.Value[len(a.Value)-1:], nameValueOpts[name]) {
				i++
			}
		case skip:
			skip = false
		default:
			w.name(name, a)
		}
	}
}

// name checks one variable name (or NAME=value) given to a builtin.
func (w *walker) name(builtin string, a Word) {
	n, _, _ := strings.Cut(a.Value, "=")
	switch {
	case strings.Contains(n, "["):
		w.s.setUnknown(fmt.Sprintf("`%s %s` evaluates the subscript as arithmetic, which can run commands", builtin, a.Value))
	case codeVars[n]:
		w.s.setUnknown(fmt.Sprintf("`%s` sets %s, which holds code the shell runs later", builtin, n))
	case n == "CDPATH":
		w.cdpath = true
	}
}

// optionNames checks the options of printf -v NAME, test -v NAME and
// wait -p NAME, which name a variable.
func (w *walker) optionNames(name string, args []Word) {
	for i, a := range args {
		switch {
		case !a.Known:
			if name != "wait" && (name == "printf" || mayBeUnary(args, i)) {
				w.evalsVars = true // it could be -v
			}
		case a.Value == "-v" && name != "wait" || a.Value == "-R" && name != "printf" || a.Value == "-p" && name == "wait":
			w.s.setUnsound(fmt.Sprintf("`%s %s` names a variable, whose subscript bash evaluates as arithmetic", name, a.Value))
			if i+1 < len(args) {
				if args[i+1].Known {
					w.name(name+" "+a.Value, args[i+1])
				} else {
					w.evalsVars = true
				}
			}
		case name == "printf" && strings.HasPrefix(a.Value, "-v"):
			w.s.setUnsound("`printf -v` sets a variable")
			w.name("printf -v", Literal(a.Value[2:]))
		}
		if name == "printf" && (!a.Known || !strings.HasPrefix(a.Value, "-")) {
			return // the format: options end
		}
	}
}

// testBinary are test's binary operators.
var testBinary = map[string]bool{"=": true, "==": true, "!=": true, "<": true, ">": true, "-eq": true,
	"-ne": true, "-lt": true, "-le": true, "-gt": true, "-ge": true, "-nt": true, "-ot": true, "-ef": true}

// mayBeUnary reports whether the unknown word args[i] of test may be read
// as a unary operator such as -v: it may when unquoted (it can become
// several words), and when quoted unless an operator precedes it (-n "$x")
// or follows it ("$x" = y), or nothing follows it.
func mayBeUnary(args []Word, i int) bool {
	if args[i].Split {
		return true
	}
	if i > 0 && args[i-1].Known && (strings.HasPrefix(args[i-1].Value, "-") || testBinary[args[i-1].Value]) {
		return false
	}
	next := i + 1
	if next == len(args) || next == len(args)-1 && args[next].Known && args[next].Value == "]" {
		return false
	}
	return !(args[next].Known && testBinary[args[next].Value])
}

// shellState handles builtins that change how the shell itself behaves;
// some of them run code.
func (w *walker) shellState(name string, args []Word) {
	w.s.setUnsound("`" + name + "` changes what the shell runs")
	if name == "fc" {
		w.s.setUnknown("`fc` runs commands from the history")
	}
	for _, a := range args {
		switch {
		case !a.Known:
			w.s.setUnknown("`" + name + "` gets a word only known at run time: " + a.Raw)
		case name == "enable" && strings.HasPrefix(a.Value, "-") && strings.Contains(a.Value, "f"):
			w.s.setUnknown("`enable -f` loads code into the shell")
		case name == "hash" && strings.HasPrefix(a.Value, "-") && strings.Contains(a.Value, "p"):
			w.s.setUnknown("`hash -p` makes a name run another program")
		case name == "compgen" && (strings.HasPrefix(a.Value, "-C") || strings.HasPrefix(a.Value, "-F")):
			w.s.setUnknown("`compgen " + a.Value + "` runs a command")
		}
	}
}
