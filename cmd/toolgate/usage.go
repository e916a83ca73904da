package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/toolgate/toolgate/internal/textdist"
	"github.com/urfave/cli/v2"
)

// A bad command line says what was wrong, what was probably meant, and
// which help to read: the command's own, not the whole program's.

// usageError is a bad command line. help is the command whose --help to
// point at ("toolgate run"), "toolgate" when unknown.
type usageError struct {
	msg  string
	help string
}

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// hint is the line that ends a usage error.
func (e *usageError) hint() string {
	help := e.help
	if help == "" {
		help = "toolgate"
	}
	return "Try: " + help + " --help"
}

// setUsageErrors makes c's (and its subcommands') bad command lines point at
// c's help: the flag errors urfave finds, and those c's action returns.
func setUsageErrors(c *cli.Command) {
	c.HideHelpCommand = true // toolgate help policy init does it, for every level
	c.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return flagError(c.HelpName, c.Flags, err) }
	if action := c.Action; action != nil {
		c.Action = func(cliCtx *cli.Context) error {
			err := action(cliCtx)
			var u *usageError
			if errors.As(err, &u) && u.help == "" {
				u.help = cliCtx.Command.HelpName
			}
			return err
		}
	}
	for _, sub := range c.Subcommands {
		setUsageErrors(sub)
	}
}

var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)
	invalidValue  = regexp.MustCompile(`^invalid value "(.*)" for flag -+([^:]+): (.*)$`)
	missingValue  = regexp.MustCompile(`^flag needs an argument: -+(.+)$`)
)

// flagError rewrites the flag package's messages for a person: flags with
// their two dashes, a suggestion for a typo, and a duration's format.
func flagError(helpName string, flags []cli.Flag, err error) error {
	msg := err.Error()
	if m := undefinedFlag.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("%s has no flag --%s", helpName, m[1])
		if s := textdist.Closest(m[1], flagNames(flags)); s != "" {
			msg += fmt.Sprintf("; did you mean --%s?", s)
		}
	} else if m := invalidValue.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("--%s: %q is not a valid value", m[2], m[1])
		if f := findFlag(flags, m[2]); f != nil {
			if _, ok := f.(*cli.DurationFlag); ok {
				msg = fmt.Sprintf("--%s takes a duration with its unit, such as 90s, 10m or 1h30m, not %q", m[2], m[1])
			}
		}
	} else if m := missingValue.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("--%s needs a value", m[1])
	}
	return &usageError{msg: msg, help: helpName}
}

func flagNames(flags []cli.Flag) []string {
	var names []string
	for _, f := range flags {
		names = append(names, f.Names()...)
	}
	return names
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// helpOrUnknown is the action of the app and of every command group: with
// no arguments it shows help; a word that is no command is a usage error
// that says what was probably meant.
func helpOrUnknown(cliCtx *cli.Context) error {
	if !cliCtx.Args().Present() {
		if cliCtx.Command != nil && cliCtx.Command.Name != "" {
			return cli.ShowSubcommandHelp(cliCtx)
		}
		return cli.ShowAppHelp(cliCtx)
	}
	where, cmds := "toolgate", cliCtx.App.Commands
	if cliCtx.Command != nil && cliCtx.Command.Name != "" {
		where, cmds = cliCtx.Command.HelpName, cliCtx.Command.Subcommands
	}
	return helpOrUnknownIn(where, cmds, cliCtx.Args().First())
}

// helpOrUnknownIn is the usage error of a word that is not one of cmds.
func helpOrUnknownIn(where string, cmds []*cli.Command, word string) error {
	if looksLikeFile(word) {
		return &usageError{help: where, msg: fmt.Sprintf("%q is a file, not a command: name the command first, then the file, e.g.\n"+
			"   toolgate policy check %s\n   toolgate run --policy %s -- claude -p \"your task\"", word, word, word)}
	}
	msg := fmt.Sprintf("%s has no command %q", where, word)
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Names()...)
		}
	}
	if s := textdist.Closest(word, names); s != "" {
		msg += fmt.Sprintf("; did you mean %s %s?", where, s)
	}
	return &usageError{msg: msg, help: where}
}

// looksLikeFile reports whether a word given where a command belongs is a
// file: one that exists, or a name with a path or an extension.
func looksLikeFile(word string) bool {
	if _, err := os.Stat(word); err == nil {
		return true
	}
	return strings.ContainsAny(word, "/.")
}

// helpCommand is toolgate help [COMMAND...]: the same as the command's
// --help, subcommands included (toolgate help policy init).
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Usage:     "show the help of a command: toolgate help run, toolgate help policy init",
		ArgsUsage: "[COMMAND...]",
		Description: `The same as COMMAND --help.

EXAMPLES
   toolgate help
   toolgate help policy init

EXIT STATUS
   0    shown
   64   no such command`,
		Action: func(cliCtx *cli.Context) error {
			args := cliCtx.Args().Slice()
			if len(args) == 0 {
				return cli.ShowAppHelp(cliCtx)
			}
			cmds, path := cliCtx.App.Commands, "toolgate"
			for _, a := range args {
				c := findCommand(cmds, a)
				if c == nil || c.Hidden {
					return helpOrUnknownIn(path, cmds, a)
				}
				cmds, path = c.Subcommands, path+" "+c.Name
			}
			return cliCtx.App.RunContext(cliCtx.Context, append(append([]string{"toolgate"}, args...), "--help"))
		},
	}
}
