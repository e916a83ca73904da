package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolgate/toolgate/supervisor/api"
)

// mcpServer is one entry of an MCP configuration.
type mcpServer struct {
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

// mcpServers reads the servers a claude session will use: every
// --mcp-config value (inline JSON or a file) and, unless
// --strict-mcp-config, the project's .mcp.json.
func mcpServers(args []string, cwd string) (map[string]mcpServer, []error) {
	values, strict := mcpConfigArgs(args)
	if !strict {
		if _, err := os.Stat(filepath.Join(cwd, ".mcp.json")); err == nil {
			values = append([]string{filepath.Join(cwd, ".mcp.json")}, values...)
		}
	}
	servers := map[string]mcpServer{}
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
			MCPServers map[string]mcpServer `json:"mcpServers"`
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

// DiscoverTools lists the tools of every MCP server the session will use,
// each in at most timeout, and returns their input schemas and
// requiresUserInteraction flags under Claude Code's names
// (mcp__server__tool). A server that fails is reported, not fatal.
func DiscoverTools(ctx context.Context, args []string, cwd string, env []string, timeout time.Duration) ([]api.ToolInfo, []error) {
	servers, errs := mcpServers(args, cwd)
	var mu sync.Mutex
	var tools []api.ToolInfo
	var wg sync.WaitGroup
	for name, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			found, err := listTools(ctx, s, env)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("MCP server %q: %w", name, err))
				return
			}
			for _, t := range found {
				schema, _ := json.Marshal(t.InputSchema)
				info := api.ToolInfo{Name: "mcp__" + name + "__" + t.Name, InputSchema: schema}
				if t.Meta != nil {
					info.RequiresUserInteraction, _ = t.Meta.AdditionalFields["anthropic/requiresUserInteraction"].(bool)
				}
				tools = append(tools, info)
			}
		}()
	}
	wg.Wait()
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	return tools, errs
}

func listTools(ctx context.Context, s mcpServer, env []string) ([]mcp.Tool, error) {
	var c *client.Client
	var err error
	switch {
	case s.Command != "" && (s.Type == "" || s.Type == "stdio"):
		serverEnv := append([]string{}, env...)
		for k, v := range s.Env {
			serverEnv = append(serverEnv, k+"="+expandVars(v, env))
		}
		c, err = client.NewStdioMCPClient(s.Command, serverEnv, s.Args...)
	case s.URL != "" && (s.Type == "http" || s.Type == ""):
		headers := map[string]string{}
		for k, v := range s.Headers {
			headers[k] = expandVars(v, env)
		}
		c, err = client.NewStreamableHttpClient(s.URL, transport.WithHTTPHeaders(headers))
	default:
		return nil, fmt.Errorf("transport %q is not supported for discovery", s.Type)
	}
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "toolgate", Version: "discovery"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return nil, err
	}
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	return res.Tools, nil
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandVars expands ${VAR} and ${VAR:-default} the way Claude Code does in
// an MCP server's env and headers.
func expandVars(s string, env []string) string {
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		for i := len(env) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(env[i], "="); ok && k == m[1] && v != "" {
				return v
			}
		}
		return m[3]
	})
}
