package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/claudecode"
)

// DiscoverTools lists the tools of every MCP server the session will use,
// each in at most timeout, and returns their input schemas and
// requiresUserInteraction flags under Claude Code's names
// (mcp__server__tool). A server that fails is reported, not fatal.
func DiscoverTools(ctx context.Context, args []string, cwd string, env []string, timeout time.Duration) ([]api.ToolInfo, []error) {
	servers, errs := claudecode.MCPServers(args, cwd)
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

func listTools(ctx context.Context, s claudecode.MCPServer, env []string) ([]mcp.Tool, error) {
	var c *client.Client
	var err error
	switch {
	case s.Command != "" && (s.Type == "" || s.Type == "stdio"):
		serverEnv := append([]string{}, env...)
		for k, v := range s.Env {
			serverEnv = append(serverEnv, k+"="+claudecode.ExpandVars(v, env))
		}
		c, err = client.NewStdioMCPClient(s.Command, serverEnv, s.Args...)
	case s.URL != "" && (s.Type == "http" || s.Type == ""):
		headers := map[string]string{}
		for k, v := range s.Headers {
			headers[k] = claudecode.ExpandVars(v, env)
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
