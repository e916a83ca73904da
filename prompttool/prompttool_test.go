package prompttool

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/mcptest"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/schematest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// decider answers from a function and remembers the last request.
type decider struct {
	fn   func(api.PromptRequest, func(string)) (api.Verdict, error)
	last api.PromptRequest
}

func (d *decider) Decide(_ context.Context, r api.PromptRequest, progress func(string)) (api.Verdict, error) {
	d.last = r
	return d.fn(r, progress)
}

func TestToolSchemaGolden(t *testing.T) {
	tool, _ := Tool(&decider{})
	got, err := json.MarshalIndent(tool, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/permission_prompt.golden.json"
	if *update {
		os.WriteFile(golden, append(got, '\n'), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./prompttool -update)", err)
	}
	if strings.TrimSpace(string(want)) != string(got) {
		t.Errorf("the tool's schema changed; if on purpose, run go test ./prompttool -update\ngot:\n%s", got)
	}
}

func call(t *testing.T, d Decider, args string) (string, bool) {
	t.Helper()
	srv, err := mcptest.NewServer(t, server.ServerTool{Tool: first(Tool(d)), Handler: second(Tool(d))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var req mcp.CallToolRequest
	req.Params.Name = ToolName
	var a map[string]any
	json.Unmarshal([]byte(args), &a)
	req.Params.Arguments = a
	res, err := srv.Client().CallTool(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("want exactly one content block, got %d", len(res.Content))
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		t.Fatalf("content %T", res.Content[0])
	}
	return text.Text, res.IsError
}

func first(t mcp.Tool, _ server.ToolHandlerFunc) mcp.Tool                { return t }
func second(_ mcp.Tool, h server.ToolHandlerFunc) server.ToolHandlerFunc { return h }

func TestAllowEchoesTheInput(t *testing.T) {
	d := &decider{fn: func(api.PromptRequest, func(string)) (api.Verdict, error) {
		return api.Verdict{Effect: api.EffectAllow, RuleID: "r"}, nil
	}}
	text, isErr := call(t, d, `{"tool_name":"Bash","input":{"command":"echo hi","n":12345678901234567890},"tool_use_id":"toolu_1"}`)
	if isErr {
		t.Fatal("an allow is not an error")
	}
	var got struct {
		Behavior     string          `json:"behavior"`
		UpdatedInput json.RawMessage `json:"updatedInput"`
	}
	if err := json.Unmarshal([]byte(text), &got); err != nil || got.Behavior != "allow" {
		t.Fatalf("%s: %v", text, err)
	}
	if d.last.ToolName != "Bash" || d.last.ToolUseID != "toolu_1" || !strings.Contains(string(d.last.Input), `"command":"echo hi"`) {
		t.Errorf("request %+v", d.last)
	}
	if !strings.Contains(string(got.UpdatedInput), `"command":"echo hi"`) {
		t.Errorf("updatedInput %s", got.UpdatedInput)
	}
}

func TestDenyIsAToolResult(t *testing.T) {
	d := &decider{fn: func(api.PromptRequest, func(string)) (api.Verdict, error) {
		return api.Verdict{Effect: api.EffectDeny, Message: "toolgate denied this call (rule r, reason_code x)", ReasonCode: "x", RuleID: "r"}, nil
	}}
	text, _ := call(t, d, `{"tool_name":"Read","input":{"file_path":".env"},"tool_use_id":"toolu_2"}`)
	var got map[string]any
	json.Unmarshal([]byte(text), &got)
	if got["behavior"] != "deny" || got["message"] != "toolgate denied this call (rule r, reason_code x)" || got["reason_code"] != "x" {
		t.Errorf("answer %s", text)
	}
}

func TestBadArgumentsAreDenied(t *testing.T) {
	d := &decider{fn: func(api.PromptRequest, func(string)) (api.Verdict, error) {
		return api.Verdict{Effect: api.EffectAllow}, nil
	}}
	for _, args := range []string{`{"tool_name":"Bash","input":{"command":"x"}}`, `{"input":{}}`, `{"tool_name":"Bash","input":"x","tool_use_id":"t"}`} {
		text, _ := call(t, d, args)
		if !strings.Contains(text, `"behavior":"deny"`) {
			t.Errorf("%s: %s", args, text)
		}
	}
}

func TestDeciderFailureIsAProtocolError(t *testing.T) {
	d := &decider{fn: func(api.PromptRequest, func(string)) (api.Verdict, error) {
		return api.Verdict{}, errors.New("daemon gone")
	}}
	srv, err := mcptest.NewServer(t, server.ServerTool{Tool: first(Tool(d)), Handler: second(Tool(d))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var req mcp.CallToolRequest
	req.Params.Name = ToolName
	req.Params.Arguments = map[string]any{"tool_name": "Bash", "input": map[string]any{}, "tool_use_id": "t"}
	res, err := srv.Client().CallTool(context.Background(), req)
	if err == nil && (res == nil || !res.IsError) {
		t.Fatalf("a failing decider must not look like an answer: %+v", res)
	}
}

func TestHostNeedsTheToken(t *testing.T) {
	d := &decider{fn: func(api.PromptRequest, func(string)) (api.Verdict, error) {
		return api.Verdict{Effect: api.EffectAllow}, nil
	}}
	h, err := Listen(d, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	resp, err := http.Post(h.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a token: %d", resp.StatusCode)
	}
	c, err := client.NewStreamableHttpClient(h.URL, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + h.Token}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != ToolName {
		t.Fatalf("tools %+v %v", tools, err)
	}
}

// TestProgressReachesTheClient: while a decision is waited for, the tool's
// progress reaches the CLI as notifications/progress on the request's
// token, over the real streamable HTTP transport: that is what keeps the
// CLI's idle watchdog from aborting a long approval. mcp-go may drop a
// notification now and then (the prompt tool sends one every 2 s, so one
// lost is harmless); the decider here keeps sending until the client has
// one, and the test fails if none ever arrives.
func TestProgressReachesTheClient(t *testing.T) {
	received := make(chan float64, 100)
	d := &decider{fn: func(r api.PromptRequest, progress func(string)) (api.Verdict, error) {
		for range 20 {
			progress("waiting for a person")
			select {
			case <-received:
				return api.Verdict{Effect: api.EffectAllow}, nil
			case <-time.After(250 * time.Millisecond):
			}
		}
		return api.Verdict{Effect: api.EffectDeny, Message: "no progress ever reached the client"}, nil
	}}
	h, err := Listen(d, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	c, err := client.NewStreamableHttpClient(h.URL, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + h.Token}))
	if err != nil {
		t.Fatal(err)
	}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != "notifications/progress" {
			return
		}
		if tok, _ := n.Params.AdditionalFields["progressToken"].(float64); tok != 7 {
			t.Errorf("progress on the wrong token: %+v", n.Params)
		}
		received <- 1
	})
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	var req mcp.CallToolRequest
	req.Params.Name = ToolName
	req.Params.Arguments = map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "x"}, "tool_use_id": "toolu_p"}
	req.Params.Meta = &mcp.Meta{ProgressToken: 7}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(mcp.TextContent).Text; !strings.Contains(text, `"behavior":"allow"`) {
		t.Errorf("no progress notification reached the client: %s", text)
	}
}

// What the tool answers Claude Code is the permission result its schema
// describes, and nothing more: an allow (the input echoed), a rule's deny,
// the gate's deny by default, and the deny of a request it cannot read.
func TestAnswersMatchTheirSchema(t *testing.T) {
	verdicts := []api.Verdict{
		{Effect: api.EffectAllow, RuleID: "allow-docs-search"},
		{Effect: api.EffectAllow, Source: api.SourcePerson, ReasonCode: "protected_branch", RuleID: "ask-pr-main"},
		{Effect: api.EffectDeny, RuleID: "deny-env", ReasonCode: "secret_file", Message: "Denied by rule deny-env (reason_code secret_file): the policy forbids it. Do not retry this call."},
		{Effect: api.EffectDeny, ReasonCode: api.ReasonDefault, Source: api.SourcePolicy}, // no message: the standard one
	}
	for _, v := range verdicts {
		d := &decider{fn: func(api.PromptRequest, func(string)) (api.Verdict, error) { return v, nil }}
		text, _ := call(t, d, `{"tool_name":"mcp__docs__search","input":{"q":"x"},"tool_use_id":"toolu_1"}`)
		schematest.Validate(t, api.SchemaPermissionResult, []byte(text))
	}
	text, _ := call(t, &decider{}, `{"tool_name":"Bash","input":"not an object","tool_use_id":"toolu_2"}`)
	schematest.Validate(t, api.SchemaPermissionResult, []byte(text))
	if !strings.Contains(text, "reason_code bad_request") || !strings.HasSuffix(text, api.RetryNotice+`","reason_code":"bad_request"}`) {
		t.Errorf("an unreadable request: %s", text)
	}
}

// A connection Claude Code keeps between two hook requests is never
// closed under it, however long the model takes: a request sent as the
// server closes it is a failed hook, and Claude Code lets the call
// through. (net/http takes ReadTimeout for the idle timeout unless told
// otherwise.)
func TestHostKeepsAnIdleConnection(t *testing.T) {
	defer func(d time.Duration) { readTimeout = d }(readTimeout)
	readTimeout = 50 * time.Millisecond
	h, err := Listen(&decider{}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.Handle("/ok", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.Base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	for i := range 2 {
		if i == 1 {
			time.Sleep(4 * readTimeout) // idle for longer than a request may take to read
		}
		if _, err := conn.Write([]byte("GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + h.Token + "\r\n\r\n")); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d on the kept connection: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// Without the token, the connection is not kept.
	for _, path := range []string{"/mcp", "/ok", "/nowhere"} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(h.Base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		if _, err := br.ReadByte(); err != io.EOF || !resp.Close {
			t.Errorf("%s without the token: the connection is kept (%v)", path, err)
		}
		conn.Close()
	}
}
