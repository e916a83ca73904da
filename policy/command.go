package policy

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/clip"
	"github.com/toolgate/toolgate/policy/bash"
)

// commandOp matches a shell command line against argv prefixes such as
// [["git","push"], ["rm"]], after parsing it with a real shell parser.
//
// A deny or ask rule matches when ANY program the script runs matches a
// prefix: every simple command, what wrappers run (sudo rm, xargs rm),
// nested scripts (bash -c '...', eval, trap, $(...)), find -exec. A script
// that runs something the matcher cannot see (python -c, source, a script
// that does not parse) matches whatever the prefixes.
//
// An allow rule matches only when the script uses nothing but the
// constructs the allow side understands and EVERY program it runs,
// wrappers and what they run included, matches a prefix as written.
//
// A prefix's first word names a program: by name ("rm") or, when it holds
// a slash, by path ("./deploy.sh", "/usr/bin/rm"), resolved against the
// session's working directory like the script's own paths. On the deny
// and ask side, the options that end a prefix match wherever the command
// has them, alone or grouped: ["rm", "-rf"] catches rm -r -f and rm x -fr.
type commandOp struct {
	prefixes []prefix
	effect   api.Effect
}

// prefix is one argv prefix of a command condition: its leading words
// (program, subcommands) and the options that end it.
type prefix struct {
	words []string // the whole prefix, as written
	lead  []string // words up to the first option
	opts  []string // the options after them; nil when words follow an option
}

func newPrefixes(docs [][]string) []prefix {
	out := make([]prefix, len(docs))
	for i, words := range docs {
		p := prefix{words: words, lead: words}
		for j := 1; j < len(words); j++ {
			if isOption(words[j]) {
				p.lead, p.opts = words[:j], words[j:]
				break
			}
		}
		for _, o := range p.opts {
			if !isOption(o) {
				p.lead, p.opts = words, nil
			}
		}
		out[i] = p
	}
	return out
}

// isOption reports whether a prefix word is an option: -r, -rf, --force.
func isOption(w string) bool { return len(w) > 1 && w[0] == '-' && w != "--" }

func (op commandOp) match(v gjson.Result, ev *evalCtx) bool {
	if v.Type != gjson.String {
		return false
	}
	s := ev.script(v.Str)
	if op.effect == api.EffectAllow {
		if s.Unsound != "" {
			return false
		}
		cmd, i := op.refused(s, ev)
		return cmd == nil && i == 0
	}
	if s.Unknown != "" {
		return true
	}
	return op.firstMatch(s, ev) != nil
}

// firstMatch is the first program of the script a deny or ask prefix
// catches, or nil.
func (op commandOp) firstMatch(s *bash.Script, ev *evalCtx) []bash.Word {
	m := matcher{ev: ev, s: s, deny: true}
	for _, cmd := range s.Commands {
		for _, c := range cmd.Cands {
			if m.any(op.prefixes, c.Argv) {
				return c.Argv
			}
		}
	}
	return nil
}

// refusal says why the allow side does not vouch for the script, or "".
func (op commandOp) refusal(s *bash.Script, ev *evalCtx) string {
	if s.Unsound != "" {
		return s.Unsound
	}
	cmd, i := op.refused(s, ev)
	switch {
	case cmd == nil && i < 0:
		return "the script runs no command"
	case cmd == nil:
		return ""
	}
	if o := (matcher{ev: ev, s: s}).unsafeFor(op.prefixes, cmd.Cands[i].Argv); o != "" {
		_, n, _ := modelOf(cmd.Cands[i].Argv)
		return fmt.Sprintf("`%s`: %s is not an option of %s known to be safe (one that neither runs a program, writes a file nor reads one it is not given)",
			argvText(cmd.Cands[i].Argv), o, argvText(cmd.Cands[i].Argv[:n]))
	}
	if i == 0 {
		return fmt.Sprintf("`%s` matches no allowed prefix", argvText(cmd.Argv))
	}
	return fmt.Sprintf("`%s` runs `%s`, which matches no allowed prefix", argvText(cmd.Argv), argvText(cmd.Cands[i].Argv))
}

// refused finds the first program no allow prefix covers: the command
// and the index of the candidate. It returns nil, -1 when the script runs
// nothing, and nil, 0 when every program is covered.
func (op commandOp) refused(s *bash.Script, ev *evalCtx) (*bash.Command, int) {
	m := matcher{ev: ev, s: s}
	ran := false
	for k := range s.Commands {
		cmd := &s.Commands[k]
		for i, c := range cmd.Cands {
			ran = true
			if !c.ScriptFile && !m.any(op.prefixes, c.Argv) {
				return cmd, i
			}
		}
	}
	if !ran {
		return nil, -1
	}
	return nil, 0
}

// explainMiss says why the condition does not hold, for policy explain.
func (op commandOp) explainMiss(v gjson.Result, ev *evalCtx) string {
	if v.Type != gjson.String || op.effect != api.EffectAllow {
		return ""
	}
	return op.refusal(ev.script(v.Str), ev)
}

// explainMatch says what made a deny or ask condition hold.
func (op commandOp) explainMatch(v gjson.Result, ev *evalCtx) string {
	if op.effect == api.EffectAllow {
		return ""
	}
	s := ev.script(v.Str)
	if s.Unknown != "" {
		return "the script may run what the matcher cannot see: " + s.Unknown
	}
	return fmt.Sprintf("`%s` matches", argvText(op.firstMatch(s, ev)))
}

func argvText(argv []bash.Word) string {
	parts := make([]string, len(argv))
	for i, w := range argv {
		parts[i] = w.Raw
		if parts[i] == "" {
			parts[i] = w.Value
		}
	}
	return clip.String(strings.Join(parts, " "), 80)
}
