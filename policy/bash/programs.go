package bash

import (
	"strings"
)

// findNoValue are find's operators and predicates that take no value: a
// word after one of them is not its value.
var findNoValue = map[string]bool{"-print": true, "-print0": true, "-delete": true, "-ls": true, "-prune": true,
	"-quit": true, "-true": true, "-false": true, "-empty": true, "-depth": true, "-xdev": true, "-mount": true,
	"-follow": true, "-noleaf": true, "-readable": true, "-writable": true, "-executable": true, "-nouser": true,
	"-nogroup": true, "-o": true, "-a": true, "-or": true, "-and": true, "-not": true, "-daystart": true}

// find runs the command of each -exec, -execdir, -ok and -okdir, with {}
// replaced by file names.
func (w *walker) find(c Candidate) []Candidate {
	var out []Candidate
	args := c.Argv[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.Known {
			prev := c.Argv[i] // the word before a
			if mayBeOption(a) && (!prev.Known || !strings.HasPrefix(prev.Value, "-") || findNoValue[prev.Value]) {
				w.s.setUnknown("find gets a word only known at run time, which could be -exec: " + a.Raw)
			}
			continue
		}
		switch a.Value {
		case "-exec", "-execdir", "-ok", "-okdir":
			end := i + 1
			for end < len(args) && !(args[end].Known && (args[end].Value == ";" || args[end].Value == "+")) {
				end++
			}
			if end > i+1 {
				out = append(out, Candidate{Argv: args[i+1 : end]})
			}
			i = end
		}
	}
	replaceWords(out, "{}")
	return out
}

// gitGlobalValue are git's options before the subcommand that take a value.
var gitGlobalValue = map[string]bool{"--git-dir": true, "--work-tree": true, "--namespace": true,
	"--super-prefix": true, "--attr-source": true, "--list-cmds": true}

// gitSafeConfig are configuration keys git -c may set without making git
// run anything: every other key (alias.*, core.pager, core.sshCommand,
// diff.external ...) may.
var gitSafeConfig = []string{"color.", "user.name", "user.email", "advice.", "core.quotepath",
	"init.defaultbranch", "log.", "column.ui", "pager.", "i18n."}

// git is matched by its subcommand: git -C dir push is also git push. A
// configuration or an exec path given on the command line can make git run
// anything: unknown.
func (w *walker) git(c Candidate) []Candidate {
	args := c.Argv[1:]
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		name, _, eq := strings.Cut(a.Value, "=")
		switch {
		case !a.Known && mayBeOption(a):
			w.s.setUnknown("git gets an option only known at run time: " + a.Raw)
			return nil
		case !a.Known && i == 0:
			return nil
		case a.Value == "-C":
			if i++; i < len(args) {
				w.cd(args[i])
			}
		case a.Value == "-c":
			if i++; i < len(args) && !gitSafe(args[i]) {
				w.s.setUnknown("git -c " + args[i].Raw + " can make git run commands the matcher cannot see")
				return nil
			}
		case name == "--config-env" || name == "--exec-path" && eq:
			w.s.setUnknown("git " + a.Value + " can make git run commands the matcher cannot see")
			return nil
		case gitGlobalValue[name]:
			if !eq {
				i++
			}
		case strings.HasPrefix(a.Value, "-"):
		default:
			if i == 0 {
				return nil
			}
			return []Candidate{{Argv: append([]Word{c.Argv[0]}, args[i:]...)}}
		}
	}
	return nil
}

func gitSafe(kv Word) bool {
	if !kv.Known {
		return false
	}
	key := strings.ToLower(kv.Value)
	for _, safe := range gitSafeConfig {
		if strings.HasPrefix(key, safe) {
			return true
		}
	}
	return false
}

// watch runs its command through sh -c, its words joined by spaces; with
// -x, directly.
func (w *walker) watch(c Candidate) []Candidate {
	args := c.Argv[1:]
	direct := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case !a.Known:
			w.s.setUnknown("watch gets a word only known at run time: " + a.Raw)
			return nil
		case a.Value == "-x" || a.Value == "--exec":
			direct = true
		case a.Value == "-n" || a.Value == "--interval" || a.Value == "-q" || a.Value == "--equexit":
			i++
		case a.Value == "--":
			if i+1 == len(args) {
				return nil
			}
			return w.watched(args[i+1:], direct)
		case strings.HasPrefix(a.Value, "-"):
		default:
			return w.watched(args[i:], direct)
		}
	}
	return nil
}

func (w *walker) watched(cmd []Word, direct bool) []Candidate {
	if direct {
		return []Candidate{{Argv: cmd}}
	}
	w.loop++
	w.nested(joinWords(cmd), "watch")
	w.loop--
	return nil
}

// chdirOption follows make -C DIR and tar -C DIR, which read their
// relative paths from DIR.
func (w *walker) chdirOption(args []Word) {
	for i, a := range args {
		switch {
		case !a.Known:
		case (a.Value == "-C" || a.Value == "--directory") && i+1 < len(args):
			w.cd(args[i+1])
		case strings.HasPrefix(a.Value, "--directory="):
			w.cd(Literal(a.Value[len("--directory="):]))
		}
	}
}
