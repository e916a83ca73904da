package policy

import (
	"fmt"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/policy/bash"
)

// Warnings lists what is valid in the document but cannot do what it
// seems to say, such as a command prefix that can never match. They do not
// make the document invalid; policy check prints them.
func (p *Policy) Warnings() []*LoadError { return p.warnings }

// keywords are bash's reserved words: never the program of a command.
var keywords = map[string]bool{"if": true, "then": true, "else": true, "elif": true, "fi": true, "for": true,
	"while": true, "until": true, "do": true, "done": true, "case": true, "esac": true, "in": true,
	"function": true, "select": true, "{": true, "}": true, "!": true, "[[": true, "]]": true, "((": true,
	"))": true, "coproc": true}

// neverAllowed says why the allow side never accepts a program, whatever
// the rule: the builtins that change the shell or run code it cannot see.
func neverAllowed(name string) string {
	switch name {
	case "source", ".":
		return "it runs a file the matcher cannot see"
	case "trap", "alias", "unalias", "set", "shopt", "enable", "hash", "fc", "history", "bind",
		"complete", "compgen", "compopt":
		return "it changes what the shell runs"
	case "let":
		return "it evaluates arithmetic that can run commands"
	case "read", "mapfile", "readarray", "getopts", "unset", "declare", "typeset", "local", "export", "readonly":
		return "it sets shell variables"
	}
	return bash.AlwaysUnknown[name]
}

// warnRules checks every rule's tool and input keys (tools.go), command
// prefix, argument_under, argument_in and argument_outside.
func (l *loader) warnRules(docs []RuleDoc) []*LoadError {
	var warns []*LoadError
	for i, d := range docs {
		keys := make([]string, 0, len(d.Input))
		for k := range d.Input {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		onTool, onKey := toolWarnings(d.Tool, keys)
		if onTool != "" {
			warns = append(warns, l.at(fmt.Sprintf("/rules/%d/tool", i), d.ID, onTool))
		}
		for _, k := range keys {
			c := d.Input[k]
			ptr := fmt.Sprintf("/rules/%d/input/%s", i, escapePointer(k))
			if msg := onKey[k]; msg != "" {
				warns = append(warns, l.at(ptr, d.ID, msg))
			}
			for j, prefix := range c.Command {
				if msg := prefixWarning(prefix, d.Effect); msg != "" {
					warns = append(warns, l.at(fmt.Sprintf("%s/command/%d", ptr, j), d.ID, msg))
				}
			}
			if c.ArgumentUnder != nil && d.Effect == api.EffectAllow {
				warns = append(warns, l.at(ptr+"/argument_under", d.ID, "in an allow rule, argument_under "+
					"holds when any one path is under a directory: it does not keep the other arguments there"))
			}
			if c.ArgumentIn != nil && d.Effect == api.EffectAllow {
				warns = append(warns, l.at(ptr+"/argument_in", d.ID, "in an allow rule, argument_in "+
					"holds when any one path is in the list: it does not keep the other arguments there"))
			}
			if c.ArgumentOutside != nil && d.Effect == api.EffectAllow {
				warns = append(warns, l.at(ptr+"/argument_outside", d.ID, "in an allow rule, argument_outside "+
					"holds when some path is outside the entries: it allows what leaves them, not what stays"))
			}
		}
	}
	return warns
}

// prefixWarning says why a prefix can never match, or "".
func prefixWarning(prefix []string, effect api.Effect) string {
	for _, w := range prefix {
		switch {
		case strings.ContainsAny(w, " \t\n"):
			return fmt.Sprintf("the word %q holds a space, so it only matches one quoted word: "+
				"a prefix is a list of words, such as %s", w, quoteWords(strings.Fields(w)))
		case strings.ContainsAny(w, "*?") || strings.Contains(w, "[") && strings.Contains(w, "]") && w != "[":
			return fmt.Sprintf("the word %q is compared literally: prefixes have no wildcards", w)
		}
	}
	prog := prefix[0]
	switch {
	case keywords[prog]:
		return fmt.Sprintf("%q is a shell keyword, not a program: this prefix never matches", prog)
	case prog == "." && effect != api.EffectAllow:
	case prog == "." || prog == ".." || prog == "~" || strings.HasSuffix(prog, "/"):
		return fmt.Sprintf("%q names a directory, not a program: this prefix never matches", prog)
	}
	if why := neverAllowed(prog); why != "" && effect == api.EffectAllow {
		return fmt.Sprintf("an allow rule never matches %q: %s", prog, why)
	}
	return ""
}

func quoteWords(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = fmt.Sprintf("%q", w)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// at is a problem at the JSON pointer ptr, placed like a load error.
func (l *loader) at(ptr, ruleID, msg string) *LoadError {
	e := &LoadError{File: l.name, RuleID: ruleID, Msg: msg, ptr: ptr}
	if off, ok := l.pos[ptr]; ok {
		e.Line, e.Col = lineCol(l.data, off)
	}
	return e
}

// Warning formats a warning the way errors are: FILE:LINE:COL: rule "ID":
// warning: what.
func (e *LoadError) Warning() string {
	w := *e
	w.Msg = "warning: " + e.Msg
	return w.Error()
}
