package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed moves the flags of the command that args name in front of
// its positional arguments, so that "policy test FILE --call JSON" parses
// as people type it: urfave/cli v2 stops reading flags at the first
// positional argument. Everything after "--" is left alone.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 || args[len(args)-1] == "--generate-bash-completion" {
		return args // shell completion reads the words as typed
	}
	out := []string{args[0]}
	cmds := app.Commands
	var leaf *cli.Command
	i := 1
	for ; i < len(args); i++ {
		c := findCommand(cmds, args[i])
		if c == nil {
			break
		}
		out = append(out, args[i])
		leaf, cmds = c, c.Subcommands
	}
	if leaf == nil || len(leaf.Subcommands) > 0 {
		return args
	}
	var flags, positional []string
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if leaf.Name == "run" {
				// toolgate run claude -p x: from the program on, the
				// words are its command line, not run's flags.
				positional = append(positional, args[i:]...)
				break
			}
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		if takesValue(leaf, a) && !strings.Contains(a, "=") && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return append(append(out, flags...), positional...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether the flag token names a flag that is not boolean.
func takesValue(c *cli.Command, token string) bool {
	name := strings.TrimLeft(token, "-")
	for _, f := range c.Flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			_, isBool := f.(*cli.BoolFlag)
			return !isBool
		}
	}
	return false
}
