package policy

import (
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/api"
)

// Permissions is the projection of a policy into Claude Code's settings:
// {"permissions": {"allow": [...], "ask": [...], "deny": [...]}}.
type Permissions struct {
	Allow []string `json:"allow"`
	Ask   []string `json:"ask"`
	Deny  []string `json:"deny"`
}

// Unprojected is a rule that Claude Code's permission strings cannot express
// exactly, and why. Such a rule is left out rather than widened or narrowed.
type Unprojected struct {
	RuleID string `json:"rule_id"`
	Reason string `json:"reason"`
}

// pathTools take a file_path (or notebook_path) that Claude Code's
// permission rules match with gitignore-style patterns.
var pathTools = map[string]string{"Read": "file_path", "Edit": "file_path", "Write": "file_path", "NotebookEdit": "notebook_path"}

// Permissions projects the policy into Claude Code's permission strings
// where a rule can be expressed (Read(./.env), Bash(git push *),
// mcp__docs__search) and lists the rules it could not project. The policy
// stays the source of truth; this is a convenience for people who also want
// Claude Code's own rules to say the same thing.
func (p *Policy) Permissions() (Permissions, []Unprojected) {
	perms := Permissions{Allow: []string{}, Ask: []string{}, Deny: []string{}}
	var skipped []Unprojected
	for _, r := range p.doc.Rules {
		strs, why := project(r)
		if why != "" {
			skipped = append(skipped, Unprojected{RuleID: r.ID, Reason: why})
			continue
		}
		switch r.Effect {
		case api.EffectAllow:
			perms.Allow = append(perms.Allow, strs...)
		case api.EffectAsk:
			perms.Ask = append(perms.Ask, strs...)
		case api.EffectDeny:
			perms.Deny = append(perms.Deny, strs...)
		}
	}
	skipped = append(skipped, Unprojected{RuleID: "", Reason: fmt.Sprintf(
		"the default %q has no counterpart: Claude Code asks for anything its rules do not list", p.Default)})
	return perms, skipped
}

func project(r RuleDoc) ([]string, string) {
	tool := r.Tool
	if strings.Contains(tool, "*") {
		server, ok := strings.CutSuffix(tool, "__*")
		if !ok || !strings.HasPrefix(server, "mcp__") || strings.Contains(server, "*") || len(r.Input) > 0 {
			return nil, "Claude Code matches tool names exactly or by MCP server (mcp__server__*), not by this glob"
		}
		return []string{tool}, ""
	}
	if len(r.Input) == 0 {
		return []string{tool}, ""
	}
	if len(r.Input) != 1 {
		return nil, "more than one input condition"
	}
	for key, c := range r.Input {
		switch {
		case tool == "Bash" && key == "command":
			return projectBash(c)
		case pathTools[tool] == key:
			return projectPath(tool, c)
		}
	}
	return nil, "Claude Code's rules cannot constrain this tool's input"
}

func projectBash(c ConditionDoc) ([]string, string) {
	switch {
	case c.ArgumentUnder != nil || c.ArgumentIn != nil || c.ArgumentOutside != nil:
		return nil, "Claude Code's Bash() rules cannot look at a command's arguments as paths"
	case c.Command != nil && c.Const == nil && c.Enum == nil && c.Prefix == nil && c.Pattern == nil && c.PathUnder == nil:
		var out []string
		for _, argv := range c.Command {
			for _, w := range argv {
				if strings.ContainsAny(w, " *\t\n()") {
					return nil, fmt.Sprintf("the word %q cannot appear in a Bash() rule", w)
				}
			}
			prefix := strings.Join(argv, " ")
			out = append(out, "Bash("+prefix+")", "Bash("+prefix+" *)")
		}
		return out, ""
	case c.Prefix != nil && c.Command == nil && c.Const == nil && c.Enum == nil && c.Pattern == nil && c.PathUnder == nil:
		if strings.ContainsAny(*c.Prefix, "*()") {
			return nil, "the prefix contains characters a Bash() rule cannot hold"
		}
		return []string{"Bash(" + *c.Prefix + "*)"}, ""
	}
	return nil, "only a command or a prefix condition on Bash's command can be projected"
}

func projectPath(tool string, c ConditionDoc) ([]string, string) {
	switch {
	case c.ArgumentUnder != nil || c.ArgumentIn != nil || c.ArgumentOutside != nil:
		return nil, "argument_under and argument_in apply to shell command lines"
	case c.PathIn != nil:
		return nil, "a path list's patterns cannot be projected"
	case c.PathUnder != nil && c.Const == nil && c.Enum == nil && c.Prefix == nil && c.Pattern == nil && c.Command == nil:
		dir := settingsPath(*c.PathUnder)
		return []string{tool + "(" + strings.TrimSuffix(dir, "/") + "/**)"}, ""
	case c.Const != nil && c.Enum == nil && c.Prefix == nil && c.Pattern == nil && c.PathUnder == nil && c.Command == nil:
		s, ok := jsonStringValue(c.Const)
		if !ok {
			return nil, "the const is not a string"
		}
		return []string{tool + "(" + settingsPath(s) + ")"}, ""
	}
	return nil, "only path_under or a const path can be projected"
}

// settingsPath writes a path the way Claude Code's rules spell it:
// "//abs" for an absolute path, "~/x" for the home, "./x" for the project.
func settingsPath(p string) string {
	switch {
	case strings.HasPrefix(p, "/"):
		return "/" + p
	case p == "~" || strings.HasPrefix(p, "~/"):
		return p
	case p == ".":
		return "."
	case strings.HasPrefix(p, "./"):
		return p
	}
	return "./" + p
}

func jsonStringValue(raw []byte) (string, bool) {
	v, err := decodeJSON(raw)
	s, ok := v.(string)
	return s, err == nil && ok
}
