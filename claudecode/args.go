package claudecode

import (
	"fmt"
	"slices"
	"strings"
)

// ArgsError is a claude command line toolgate run must refuse: one that
// would take calls around the gate.
type ArgsError struct{ Msg string }

func (e *ArgsError) Error() string { return e.Msg }

// bypassModes are permission modes in which the prompt tool is never asked.
var bypassModes = []string{"bypassPermissions", "dontAsk"}

// CheckArgs refuses arguments that would take calls around the gate.
func CheckArgs(args []string) error {
	for i, a := range args {
		if a == "--" {
			return nil
		}
		name, value, hasValue := strings.Cut(a, "=")
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		switch name {
		case "--permission-prompt-tool":
			return &ArgsError{"toolgate run provides --permission-prompt-tool itself; remove it from the claude arguments"}
		case "--settings":
			// Claude Code takes one --settings layer, the last (observed on
			// 2.1.332): the user's would drop run's own, its hooks with it,
			// and every call would run ungated.
			return &ArgsError{"toolgate run provides --settings itself (its hooks), and Claude Code reads only the last --settings: yours would take every call around the gate; " +
				"put these settings in .claude/settings.local.json or ~/.claude/settings.json instead"}
		case "--bare":
			return &ArgsError{"--bare would drop toolgate's hooks: every call would reach the gate unrecorded; remove it"}
		case "--dangerously-skip-permissions", "--allow-dangerously-skip-permissions":
			return &ArgsError{fmt.Sprintf("%s would let calls run without the gate; remove it", name)}
		case "--permission-mode":
			if slices.Contains(bypassModes, value) {
				return &ArgsError{fmt.Sprintf("--permission-mode %s never asks the prompt tool, so asks could not reach the gate; use default or acceptEdits", value)}
			}
		case "--permission-prompts":
			if value == "none" {
				return &ArgsError{"--permission-prompts none denies every ask before the gate sees it; remove it"}
			}
		}
	}
	return nil
}

// SettingsArgs returns the values of every --settings in args (a file, or
// JSON).
func SettingsArgs(args []string) []string {
	var values []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			return values
		case strings.HasPrefix(a, "--settings="):
			values = append(values, strings.TrimPrefix(a, "--settings="))
		case a == "--settings" && i+1 < len(args):
			i++
			values = append(values, args[i])
		}
	}
	return values
}

// MCPConfigArgs returns the values of every --mcp-config in args (the flag
// takes one or more values, up to the next flag) and whether
// --strict-mcp-config is set.
func MCPConfigArgs(args []string) (values []string, strict bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return values, strict
		case a == "--strict-mcp-config":
			strict = true
		case strings.HasPrefix(a, "--mcp-config="):
			values = append(values, strings.TrimPrefix(a, "--mcp-config="))
		case a == "--mcp-config":
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				values = append(values, args[i])
			}
		}
	}
	return values, strict
}
