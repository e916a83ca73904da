package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/claudecode"
	"github.com/toolgate/toolgate/paths"
)

// Discovery says how toolgate run lists the tools of the MCP servers a
// session will use, before claude starts: their input schemas and
// requiresUserInteraction flags. Each server is bounded by Timeout; one
// that takes longer than NoticeAfter says so on Notice; what a server
// listed is kept in CacheDir by the server's configuration for CacheTTL,
// so that a cron job does not start every stdio server once more on every
// run.
type Discovery struct {
	Timeout     time.Duration // per server; DefaultDiscoveryTimeout when 0
	CacheDir    string        // none when ""
	CacheTTL    time.Duration // no cache when 0
	Notice      io.Writer     // io.Discard when nil
	NoticeAfter time.Duration // a second when 0
}

// DefaultDiscoveryTimeout bounds the listing of one server's tools.
const DefaultDiscoveryTimeout = 10 * time.Second

// DiscoverTools lists the tools of every MCP server the session will use
// and returns them under Claude Code's names (mcp__server__tool). A server
// that fails or is too slow is reported, not fatal: its tools are not
// schema-checked.
func (d Discovery) DiscoverTools(ctx context.Context, args []string, cwd string, env []string) ([]api.ToolInfo, []error) {
	if d.Timeout <= 0 {
		d.Timeout = DefaultDiscoveryTimeout
	}
	if d.NoticeAfter <= 0 {
		d.NoticeAfter = time.Second
	}
	if d.Notice == nil {
		d.Notice = io.Discard
	}
	servers, errs := claudecode.MCPServers(args, cwd)
	var mu sync.Mutex
	var tools []api.ToolInfo
	var wg sync.WaitGroup
	for name, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			found, err := d.server(ctx, name, s, cwd, env)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("MCP server %q: %w", name, err))
				return
			}
			tools = append(tools, found...)
		}()
	}
	wg.Wait()
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	return tools, errs
}

// server lists one server's tools, from the cache when it has them.
func (d Discovery) server(ctx context.Context, name string, s claudecode.MCPServer, cwd string, env []string) ([]api.ToolInfo, error) {
	key := cacheKey(name, s, cwd, env)
	if tools, ok := d.cached(key); ok {
		return tools, nil
	}
	notice := time.AfterFunc(d.NoticeAfter, func() {
		fmt.Fprintf(d.Notice, "toolgate: listing the tools of MCP server %q (%s) before claude starts, for up to %s…\n", name, describe(s), d.Timeout)
	})
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	found, err := listTools(ctx, s, env)
	notice.Stop()
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil && err != nil {
		return nil, fmt.Errorf("did not list its tools within %s (--mcp-timeout)", d.Timeout)
	}
	if err != nil {
		return nil, err
	}
	var tools []api.ToolInfo
	for _, t := range found {
		schema, _ := json.Marshal(t.InputSchema)
		info := api.ToolInfo{Name: "mcp__" + name + "__" + t.Name, InputSchema: schema}
		if t.Meta != nil {
			info.RequiresUserInteraction, _ = t.Meta.AdditionalFields["anthropic/requiresUserInteraction"].(bool)
		}
		tools = append(tools, info)
	}
	d.store(key, name, tools)
	return tools, nil
}

// describe names a server's transport for a person.
func describe(s claudecode.MCPServer) string {
	if s.Command != "" {
		return "stdio: " + s.Command
	}
	return s.Type + ": " + s.URL
}

// cacheEntry is one server's listed tools, as kept.
type cacheEntry struct {
	SchemaVersion int            `json:"schema_version"`
	Server        string         `json:"server"`
	ListedAt      time.Time      `json:"listed_at"`
	Tools         []api.ToolInfo `json:"tools"`
}

// cacheKey identifies a server's configuration: everything that starts or
// reaches it (its variables and headers expanded, the working directory a
// relative command runs in), and the executable itself, so that a changed
// binary is listed again. Only a digest is kept: headers hold tokens.
func cacheKey(name string, s claudecode.MCPServer, cwd string, env []string) string {
	expand := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = claudecode.ExpandVars(v, env)
		}
		return out
	}
	exe := ""
	if s.Command != "" {
		if path, err := exec.LookPath(s.Command); err == nil {
			if info, err := os.Stat(path); err == nil {
				exe = fmt.Sprintf("%s %d %d", path, info.Size(), info.ModTime().UnixNano())
			}
		}
	}
	doc, _ := json.Marshal([]any{name, s.Type, s.Command, s.Args, expand(s.Env), s.URL, expand(s.Headers), cwd, exe})
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:16])
}

// maxCacheEntry bounds a cached listing of one server's tools.
const maxCacheEntry = 64 << 20

func (d Discovery) cached(key string) ([]api.ToolInfo, bool) {
	if d.CacheDir == "" || d.CacheTTL <= 0 {
		return nil, false
	}
	data, err := paths.ReadRegular(filepath.Join(d.CacheDir, key+".json"), maxCacheEntry) // the model's code can write there: a FIFO must not hold run's start
	if err != nil {
		return nil, false
	}
	var e cacheEntry
	if json.Unmarshal(data, &e) != nil || e.SchemaVersion != 1 || time.Since(e.ListedAt) > d.CacheTTL {
		return nil, false
	}
	return e.Tools, true
}

// store keeps a server's tools; a cache that cannot be written only costs
// the next run a listing.
func (d Discovery) store(key, name string, tools []api.ToolInfo) {
	if d.CacheDir == "" || d.CacheTTL <= 0 {
		return
	}
	if os.MkdirAll(d.CacheDir, 0o700) != nil {
		return
	}
	data, _ := json.Marshal(cacheEntry{SchemaVersion: 1, Server: name, ListedAt: time.Now().UTC(), Tools: tools})
	tmp, err := os.CreateTemp(d.CacheDir, ".tools-*")
	if err != nil {
		return
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil && cerr == nil {
		err = os.Rename(tmp.Name(), filepath.Join(d.CacheDir, key+".json"))
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
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
