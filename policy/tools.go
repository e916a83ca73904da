package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/textdist"
)

// builtinTools are Claude Code's built-in tools and the fields of their
// input, as the pinned release sends them (its request's tools, and the
// hook events of the tools it loads through ToolSearch). Names are
// case-sensitive: a rule for "bash" never sees a Bash call, and a condition
// on a field the tool does not have ("filepath") never holds, so that a
// deny written so never denies. policy check warns of both.
var builtinTools = map[string][]string{
	"Bash":         {"command", "description", "timeout", "run_in_background", "dangerouslyDisableSandbox"},
	"Read":         {"file_path", "offset", "limit", "pages", "allow_large"},
	"Write":        {"file_path", "content"},
	"Edit":         {"file_path", "old_string", "new_string", "replace_all"},
	"MultiEdit":    {"file_path", "edits"},
	"NotebookEdit": {"notebook_path", "cell_id", "new_source", "cell_type", "edit_mode"},
	"Glob":         {"pattern", "path"},
	"Grep": {"pattern", "path", "glob", "type", "output_mode", "-A", "-B", "-C", "-i", "-n", "context",
		"head_limit", "offset", "multiline"},
	"WebFetch":       {"url", "prompt"},
	"WebSearch":      {"query", "allowed_domains", "blocked_domains"},
	"Agent":          {"description", "prompt", "subagent_type", "model", "run_in_background", "isolation", "effort"},
	"Task":           {"description", "prompt", "subagent_type", "model", "run_in_background"},
	"Skill":          {"skill", "args"},
	"ToolSearch":     {"query", "max_results"},
	"Monitor":        nil, // fields not pinned: only the name is checked
	"TodoWrite":      {"todos"},
	"ListAgents":     {"channel", "cursor", "q"},
	"Workflow":       {"name", "description", "title", "script", "scriptPath", "args", "resumeFromRunId"},
	"ScheduleWakeup": {"delaySeconds", "prompt", "reason", "stop", "noop"},
	"ReportFindings": {"findings", "level"},
	"ExitPlanMode":   nil,
	"KillShell":      nil,
	"BashOutput":     nil,
}

// toolWarnings says why a rule's tool, or a key of its input, can never be
// what a call has.
func toolWarnings(tool string, keys []string) (onTool string, onKey map[string]string) {
	if strings.ContainsAny(tool, "*?[") || strings.HasPrefix(tool, "mcp__") {
		return "", nil
	}
	fields, known := builtinTools[tool]
	if !known {
		for name := range builtinTools {
			if strings.EqualFold(name, tool) {
				return fmt.Sprintf("Claude Code's tool is %q, and tool names are compared as written: this rule never matches", name), nil
			}
		}
		if strings.HasPrefix(strings.ToLower(tool), "mcp_") {
			return fmt.Sprintf("an MCP tool is named mcp__SERVER__TOOL, with two underscores each side: %q never matches", tool), nil
		}
		return "", nil // a tool of a newer release, or of an SDK host
	}
	if fields == nil {
		return "", nil
	}
	for _, k := range keys {
		top := k
		if i := strings.IndexAny(k, ".|#@*?"); i >= 0 {
			top = k[:i]
		}
		if top == "" || slices.Contains(fields, top) {
			continue
		}
		if onKey == nil {
			onKey = map[string]string{}
		}
		msg := fmt.Sprintf("%s has no field %q: this condition never holds", tool, top)
		if near := nearest(top, fields); near != "" {
			msg += fmt.Sprintf("; did you mean %q?", near)
		}
		onKey[k] = msg
	}
	return "", onKey
}

// nearest is the name of names closest to typed, when it is close enough
// to be a slip: another case or underscores (filepath, file_path,
// FilePath), or a letter or two (textdist.Closest).
func nearest(typed string, names []string) string {
	norm := func(s string) string { return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s)) }
	for _, n := range names {
		if norm(n) == norm(typed) {
			return n
		}
	}
	return textdist.Closest(typed, names)
}
