package policy

import (
	"fmt"
	"strings"
)

// builtin handles a bare program name that bash runs as a builtin: what it
// runs in turn, and what the allow side must refuse. ok is false for a
// name the matcher does not treat specially (echo, pwd, ls ...).
func (w *walker) builtin(name string, c candidate) (next []candidate, ok bool) {
	args := c.argv[1:]
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
		if len(args) > 1 && args[0].known && args[0].s == "-x" {
			return []candidate{{argv: args[1:]}}, true
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
func joinWords(args []word) word {
	parts := make([]string, len(args))
	raws := make([]string, len(args))
	for i, a := range args {
		if !a.known {
			return unknownWord(a.raw, true)
		}
		parts[i], raws[i] = a.s, a.raw
	}
	w := literalWord(strings.Join(parts, " "))
	w.raw = strings.Join(raws, " ")
	return w
}

// trap ACTION SIGNAL... runs ACTION later, perhaps many times.
func (w *walker) trap(args []word) {
	w.s.setUnsound("`trap` sets a script to run later")
	if len(args) > 0 && args[0].known && args[0].s == "--" {
		args = args[1:]
	}
	if len(args) < 2 || args[0].known && (args[0].s == "-" || args[0].s == "" || strings.HasPrefix(args[0].s, "-")) {
		return // trap, trap -p, trap SIGNAL, trap - SIGNAL: nothing new runs
	}
	w.loop++
	w.nested(args[0], "trap")
	w.loop--
}

// alias NAME=VALUE makes NAME mean something else in what follows.
func (w *walker) alias(name string, args []word) {
	why := "`" + name + "` changes what later commands mean"
	w.s.setUnsound(why)
	for _, a := range args {
		if !a.known || strings.Contains(a.s, "=") {
			w.s.setUnknown(why)
		}
	}
}

// nameValueOpts are the short options of variable-setting builtins that
// take a value that is not a variable name.
var nameValueOpts = map[string]string{"read": "dinNptu", "mapfile": "dnOsuc", "readarray": "dnOsuc"}

// names checks the variable names a builtin sets: bash evaluates a
// subscript (a[$(cmd)]) as arithmetic, which can run commands.
func (w *walker) names(name string, args []word) {
	skip := name == "getopts" // its first operand is the option string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case !a.known:
			w.evalsVars = true
		case (name == "mapfile" || name == "readarray") && strings.HasPrefix(a.s, "-C"):
			w.s.setUnknown("`" + name + " -C` runs a callback the matcher cannot see")
		case strings.HasPrefix(a.s, "-") && len(a.s) > 1 && !skip:
			if strings.ContainsAny(a.s[len(a.s)-1:], nameValueOpts[name]) {
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
func (w *walker) name(builtin string, a word) {
	n, _, _ := strings.Cut(a.s, "=")
	switch {
	case strings.Contains(n, "["):
		w.s.setUnknown(fmt.Sprintf("`%s %s` evaluates the subscript as arithmetic, which can run commands", builtin, a.s))
	case codeVars[n]:
		w.s.setUnknown(fmt.Sprintf("`%s` sets %s, which holds code the shell runs later", builtin, n))
	case n == "CDPATH":
		w.cdpath = true
	}
}

// optionNames checks the options of printf -v NAME, test -v NAME and
// wait -p NAME, which name a variable.
func (w *walker) optionNames(name string, args []word) {
	for i, a := range args {
		switch {
		case !a.known:
			if name != "wait" && (name == "printf" || mayBeUnary(args, i)) {
				w.evalsVars = true // it could be -v
			}
		case a.s == "-v" && name != "wait" || a.s == "-R" && name != "printf" || a.s == "-p" && name == "wait":
			w.s.setUnsound(fmt.Sprintf("`%s %s` names a variable, whose subscript bash evaluates as arithmetic", name, a.s))
			if i+1 < len(args) {
				if args[i+1].known {
					w.name(name+" "+a.s, args[i+1])
				} else {
					w.evalsVars = true
				}
			}
		case name == "printf" && strings.HasPrefix(a.s, "-v"):
			w.s.setUnsound("`printf -v` sets a variable")
			w.name("printf -v", literalWord(a.s[2:]))
		}
		if name == "printf" && (!a.known || !strings.HasPrefix(a.s, "-")) {
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
func mayBeUnary(args []word, i int) bool {
	if args[i].split {
		return true
	}
	if i > 0 && args[i-1].known && (strings.HasPrefix(args[i-1].s, "-") || testBinary[args[i-1].s]) {
		return false
	}
	next := i + 1
	if next == len(args) || next == len(args)-1 && args[next].known && args[next].s == "]" {
		return false
	}
	return !(args[next].known && testBinary[args[next].s])
}

// shellState handles builtins that change how the shell itself behaves;
// some of them run code.
func (w *walker) shellState(name string, args []word) {
	w.s.setUnsound("`" + name + "` changes what the shell runs")
	if name == "fc" {
		w.s.setUnknown("`fc` runs commands from the history")
	}
	for _, a := range args {
		switch {
		case !a.known:
			w.s.setUnknown("`" + name + "` gets a word only known at run time: " + a.raw)
		case name == "enable" && strings.HasPrefix(a.s, "-") && strings.Contains(a.s, "f"):
			w.s.setUnknown("`enable -f` loads code into the shell")
		case name == "hash" && strings.HasPrefix(a.s, "-") && strings.Contains(a.s, "p"):
			w.s.setUnknown("`hash -p` makes a name run another program")
		case name == "compgen" && (strings.HasPrefix(a.s, "-C") || strings.HasPrefix(a.s, "-F")):
			w.s.setUnknown("`compgen " + a.s + "` runs a command")
		}
	}
}
