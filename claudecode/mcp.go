package claudecode

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/clip"
)

// MCPServer is one entry of an MCP configuration.
type MCPServer struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// skippedServers are names Claude Code ignores in an MCP configuration (as
// observed on the pinned release).
var skippedServers = []string{"workspace", "claude_ai", "claude-in-chrome", "computer-use", "hearthbot", "__proto__"}

// MCPServers reads the servers a claude session will start: every
// --mcp-config value in args (inline JSON or a file, relative to cwd) and,
// unless --strict-mcp-config, the project's .mcp.json. A value it cannot
// read is reported and skipped.
func MCPServers(args []string, cwd string) (map[string]MCPServer, []error) {
	values, strict := MCPConfigArgs(args)
	if !strict {
		if _, err := os.Stat(filepath.Join(cwd, ".mcp.json")); err == nil {
			values = append([]string{filepath.Join(cwd, ".mcp.json")}, values...)
		}
	}
	servers := map[string]MCPServer{}
	var errs []error
	for _, v := range values {
		data := []byte(v)
		if !strings.HasPrefix(strings.TrimSpace(v), "{") {
			path := v
			if !filepath.IsAbs(path) {
				path = filepath.Join(cwd, path)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				errs = append(errs, fmt.Errorf("mcp config %s: %w", v, err))
				continue
			}
			data = b
		}
		var doc struct {
			MCPServers map[string]MCPServer `json:"mcpServers"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			errs = append(errs, fmt.Errorf("mcp config %s: %w", clip.String(v, 60), err))
			continue
		}
		for name, s := range doc.MCPServers {
			if !slices.Contains(skippedServers, name) {
				servers[name] = s
			}
		}
	}
	return servers, errs
}

// ExpandVars expands ${VAR} and ${VAR:-default} the way Claude Code does
// in an MCP server's env and headers; env is KEY=VALUE, the last one wins.
// A bare $VAR, or a reference that is not closed, stays as it is. (No
// regexp: the hook binary links this package, and regexp's package
// initialisation would cost every tool call.)
func ExpandVars(s string, env []string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			break
		}
		name, def, hasDef := strings.Cut(s[i+2:i+end], ":-")
		b.WriteString(s[:i])
		if !validName(name) {
			b.WriteString(s[i : i+end+1])
		} else if v := lookup(env, name); v != "" {
			b.WriteString(v)
		} else if hasDef {
			b.WriteString(def)
		}
		s = s[i+end+1:]
	}
	b.WriteString(s)
	return b.String()
}

// validName is an environment variable's name: a letter or underscore,
// then letters, digits or underscores.
func validName(name string) bool {
	for i, r := range name {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return name != ""
}

// lookup is the last value of name in env.
func lookup(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v
		}
	}
	return ""
}
