package claudecode

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
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

// skippedServers are names Claude Code ignores (CONTRACT.md §7).
var skippedServers = map[string]bool{"workspace": true, "claude_ai": true, "claude-in-chrome": true,
	"computer-use": true, "hearthbot": true, "__proto__": true}

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
			errs = append(errs, fmt.Errorf("mcp config %s: %w", clip(v, 60), err))
			continue
		}
		for name, s := range doc.MCPServers {
			if !skippedServers[name] {
				servers[name] = s
			}
		}
	}
	return servers, errs
}

// varRef is compiled on first use: the hook binary links this package and
// must not pay for a regular expression at start-up.
var varRef = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)
})

// ExpandVars expands ${VAR} and ${VAR:-default} the way Claude Code does
// in an MCP server's env and headers; env is KEY=VALUE, the last one wins.
func ExpandVars(s string, env []string) string {
	re := varRef()
	return re.ReplaceAllStringFunc(s, func(ref string) string {
		m := re.FindStringSubmatch(ref)
		for i := len(env) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(env[i], "="); ok && k == m[1] && v != "" {
				return v
			}
		}
		return m[3]
	})
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
