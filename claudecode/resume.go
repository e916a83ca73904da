package claudecode

import (
	"slices"
	"strings"
)

// The options of claude (2.1.332, from its --help) by what follows them on
// a command line: one value, one or more values up to the next option, or
// an optional value. The rest take none. Commander, which parses claude's
// command line, reads them this way. (Lists, not maps: a map is made as
// the package is initialised, in every hook's start too.)
var (
	valueOptions = []string{"--add-dir", "--agent", "--agents", "--append-system-prompt", "--autocompact",
		"--debug-file", "--effort", "--environment", "--fallback-model", "--input-format", "--json-schema",
		"--max-budget-usd", "--model", "-n", "--name", "--output-format", "--permission-mode", "--permission-prompts",
		"--permission-prompt-tool", "--plugin-dir", "--plugin-url", "--remote-control-session-name-prefix",
		"--session-id", "--setting-sources", "--settings", "--system-prompt", "--system-prompt-snapshot",
		"--max-turns", "--append-system-prompt-file", "--system-prompt-file"}
	variadicOptions = []string{"--add-dir", "--allowedTools", "--allowed-tools", "--betas", "--disallowedTools",
		"--disallowed-tools", "--file", "--mcp-config", "--tools"}
	optionalValueOptions = []string{"--cloud", "-d", "--debug", "--from-pr", "--prompt-suggestions", "--remote-control",
		"-r", "--resume", "--teleport", "-w", "--worktree"}
	// sessionOptions choose the conversation: a resume names its own.
	sessionOptions = []string{"-r", "--resume", "-c", "--continue", "--session-id", "--fork-session", "--from-pr"}
)

// ResumeArgs are the arguments that take Claude Code's session up again
// where a deferred call ended it: the user's own arguments without the
// prompt (the words that are no option's value: the conversation goes on
// with "Continue from where you left off", not with the task again) and
// without the options that choose a conversation, then --resume session.
func ResumeArgs(args []string, session string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break // the rest is the prompt
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue // a word of the prompt
		}
		name, _, inline := strings.Cut(a, "=")
		n := 0 // the values that follow
		switch {
		case inline:
		case slices.Contains(variadicOptions, name):
			for n < len(args)-i-1 && !strings.HasPrefix(args[i+1+n], "-") {
				n++
			}
		case slices.Contains(valueOptions, name):
			n = min(1, len(args)-i-1)
		case slices.Contains(optionalValueOptions, name) && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
			n = 1
		}
		if !slices.Contains(sessionOptions, name) {
			out = append(out, args[i:i+1+n]...)
		}
		i += n
	}
	return append(out, "--resume", session)
}
