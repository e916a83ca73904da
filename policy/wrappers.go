package policy

import (
	"path"
	"slices"
	"strings"
)

// wrapper describes a command that runs another command given as its
// arguments. The deny/ask matcher looks through these; the list is the
// documented set (README, "command" condition).
type wrapper struct {
	valueOpts  string   // short options that take a value: "u" for sudo -u USER
	longValue  []string // long options that take the next word as value
	positional int      // operands before the command (timeout's DURATION)
	assigns    bool     // NAME=value words may precede the command (env)
}

var wrappers = map[string]wrapper{
	"builtin": {},
	"command": {},
	"exec":    {valueOpts: "a"},
	"nohup":   {},
	"setsid":  {},
	"time":    {},
	"sudo": {valueOpts: "CDghprtUu", longValue: []string{"--chdir", "--close-from", "--group",
		"--host", "--other-user", "--prompt", "--role", "--type", "--user", "--chroot"}},
	"doas":    {valueOpts: "Cu"},
	"env":     {valueOpts: "CSu", longValue: []string{"--chdir", "--unset", "--split-string"}, assigns: true},
	"nice":    {valueOpts: "n", longValue: []string{"--adjustment"}},
	"ionice":  {valueOpts: "cnp", longValue: []string{"--class", "--classdata", "--pid"}},
	"timeout": {valueOpts: "ks", longValue: []string{"--kill-after", "--signal"}, positional: 1},
	"stdbuf":  {valueOpts: "eio", longValue: []string{"--input", "--output", "--error"}},
	"xargs": {valueOpts: "adEeIiLlnPs", longValue: []string{"--arg-file", "--delimiter", "--eof",
		"--replace", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}},
	"chrt":    {positional: 1},
	"taskset": {positional: 1},
	"flock":   {valueOpts: "wEc", longValue: []string{"--timeout", "--conflict-exit-code"}, positional: 1},
}

// shells run the script given to -c.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "ash": true, "mksh": true}

// candidates returns the argv forms a deny or ask rule is matched against:
// the command as written with its program's directory removed (/bin/rm is
// rm), then the same after removing each wrapper in turn (sudo -u x rm is rm).
func (c simpleCommand) candidates() [][]word {
	if len(c.argv) == 0 {
		return nil
	}
	argv := baseName(c.argv)
	out := [][]word{argv}
	for range maxNesting {
		w, ok := wrappers[argv[0].s]
		if !argv[0].known || !ok {
			break
		}
		argv = baseName(w.strip(argv[1:]))
		if len(argv) == 0 {
			break
		}
		out = append(out, argv)
	}
	return out
}

func baseName(argv []word) []word {
	if len(argv) == 0 || !argv[0].known || !strings.Contains(argv[0].s, "/") {
		return argv
	}
	out := append([]word{{path.Base(argv[0].s), true}}, argv[1:]...)
	return out
}

// strip removes the wrapper's options and operands. An unknown word in
// option position is skipped as if it were an option.
func (w wrapper) strip(args []word) []word {
	for len(args) > 0 {
		a := args[0]
		switch {
		case a.known && a.s == "--":
			args = args[1:]
			return w.operands(args)
		case !a.known:
			args = args[1:]
		case strings.HasPrefix(a.s, "--"):
			args = args[1:]
			if !strings.Contains(a.s, "=") && slices.Contains(w.longValue, a.s) && len(args) > 0 {
				args = args[1:]
			}
		case strings.HasPrefix(a.s, "-") && len(a.s) > 1:
			args = args[1:]
			last := a.s[len(a.s)-1:]
			if strings.Contains(w.valueOpts, last) && len(args) > 0 {
				args = args[1:]
			}
		case w.assigns && strings.Contains(a.s, "=") && !strings.HasPrefix(a.s, "="):
			args = args[1:]
		default:
			return w.operands(args)
		}
	}
	return args
}

func (w wrapper) operands(args []word) []word {
	if len(args) < w.positional {
		return nil
	}
	return args[w.positional:]
}

// nestedScript finds the script of "bash -c SCRIPT" (also -lc, -ec ...) or
// "eval WORDS". ok is false when argv is neither.
func nestedScript(argv []word) (script word, ok bool) {
	if len(argv) == 0 || !argv[0].known {
		return word{}, false
	}
	if argv[0].s == "eval" {
		var parts []string
		for _, a := range argv[1:] {
			if !a.known {
				return word{}, true
			}
			parts = append(parts, a.s)
		}
		return word{strings.Join(parts, " "), true}, true
	}
	if !shells[argv[0].s] {
		return word{}, false
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case !a.known:
			return word{}, true
		case a.s == "-o" || a.s == "+o":
			i++ // set -o NAME
		case strings.HasPrefix(a.s, "--"):
			// --login, --norc ...
		case strings.HasPrefix(a.s, "-") || strings.HasPrefix(a.s, "+"):
			if strings.Contains(a.s[1:], "c") {
				if i+1 < len(argv) {
					return argv[i+1], true
				}
				return word{}, true
			}
		default:
			return word{}, false // a script file: nothing to look into
		}
	}
	return word{}, false
}

// findExec returns the command of "find ... -exec CMD ... ;" (also -execdir,
// -ok, -okdir).
func findExec(argv []word) []word {
	if len(argv) == 0 || argv[0].s != "find" {
		return nil
	}
	for i, a := range argv {
		switch a.s {
		case "-exec", "-execdir", "-ok", "-okdir":
			inner := argv[i+1:]
			for j, b := range inner {
				if b.s == ";" || b.s == "+" {
					inner = inner[:j]
					break
				}
			}
			if len(inner) > 0 {
				return inner
			}
		}
	}
	return nil
}
