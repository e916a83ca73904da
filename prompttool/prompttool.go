// Package prompttool is the permission_prompt MCP tool that Claude Code
// calls (--permission-prompt-tool) for every call it would ask a person
// about, and the loopback listener (Host) that serves it and toolgate
// run's http hook; run registers the tool for the hook binary's sessions
// only. It is a thin mcp-go adapter over Decider: denials are tool
// results, and a Go error means the protocol itself failed. It speaks the
// api package's vocabulary and must not import the ledger or the daemon.
package prompttool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
)

// ToolName is the tool's name; Claude Code knows it as
// mcp__<server>__permission_prompt.
const ToolName = "permission_prompt"

// Decider decides permission prompts: the verdict on one call (an allow
// may carry the input to run in UpdatedInput; the submitted input runs
// when it does not). progress, when not nil, tells Claude Code that the
// decision is still being waited for (it resets the CLI's idle watchdog).
// An error means the decision could not be made at all.
type Decider interface {
	Decide(ctx context.Context, r api.PromptRequest, progress func(message string)) (api.Verdict, error)
}

// Tool returns the permission_prompt tool and its handler.
func Tool(d Decider) (mcp.Tool, server.ToolHandlerFunc) {
	tool := mcp.NewTool(ToolName,
		mcp.WithDescription("Decides whether a Claude Code tool call may run: toolgate's policy, schema checks and approvals."),
		mcp.WithString("tool_name", mcp.Required(), mcp.Description("The tool Claude Code wants to call.")),
		mcp.WithObject("input", mcp.Required(), mcp.Description("The tool's input.")),
		mcp.WithString("tool_use_id", mcp.Description("The id of the tool_use block.")),
	)
	return tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r, progress, err := request(ctx, req)
		if err != nil {
			v := api.Verdict{Effect: api.EffectDeny, ReasonCode: api.ReasonBadRequest, Source: api.SourceGate}
			v.Message = api.DenyMessage(v, err.Error())
			return answer(v, nil), nil
		}
		v, err := d.Decide(ctx, r, progress)
		if err != nil {
			return nil, fmt.Errorf("permission_prompt: %w", err)
		}
		return answer(v, r.Input), nil
	}
}

// request decodes the prompt's arguments, keeping the input's exact bytes,
// and the way to tell Claude Code about progress (nil without a token).
func request(ctx context.Context, req mcp.CallToolRequest) (api.PromptRequest, func(string), error) {
	raw := req.Params.RawArguments
	if len(raw) == 0 {
		b, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return api.PromptRequest{}, nil, err
		}
		raw = b
	}
	args := gjson.ParseBytes(raw)
	r := api.PromptRequest{ToolName: args.Get("tool_name").String(), ToolUseID: args.Get("tool_use_id").String()}
	input := args.Get("input")
	if r.ToolName == "" || !input.IsObject() {
		return r, nil, fmt.Errorf("tool_name and an input object are required")
	}
	r.Input = json.RawMessage(input.Raw)
	var report func(string)
	if meta := req.Params.Meta; meta != nil {
		if id, ok := meta.AdditionalFields["claudecode/toolUseId"].(string); ok && r.ToolUseID == "" {
			r.ToolUseID = id
		}
		if meta.ProgressToken != nil {
			report = progress(ctx, meta.ProgressToken)
		}
	}
	if r.ToolUseID == "" {
		return r, nil, fmt.Errorf("tool_use_id is missing")
	}
	return r, report, nil
}

// progress sends MCP progress notifications on the request's token.
func progress(ctx context.Context, token mcp.ProgressToken) func(string) {
	n := 0
	return func(message string) {
		srv := server.ServerFromContext(ctx)
		if srv == nil {
			return
		}
		n++
		srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
			"progressToken": token, "progress": n, "message": message})
	}
}

// answer is the tool result Claude Code expects: one text block whose text
// is the JSON decision. reason_code and rule_id travel beside behavior for
// other readers; the CLI ignores them.
func answer(v api.Verdict, submitted json.RawMessage) *mcp.CallToolResult {
	var doc map[string]any
	if v.Effect == api.EffectAllow {
		input := v.UpdatedInput
		if input == nil {
			input = submitted
		}
		// Always echo the input: some CLI versions reject an allow without it.
		doc = map[string]any{"behavior": "allow", "updatedInput": input}
	} else {
		msg := v.Message
		if msg == "" {
			msg = api.DenyMessage(v, "")
		}
		doc = map[string]any{"behavior": "deny", "message": msg}
	}
	if v.ReasonCode != "" {
		doc["reason_code"] = v.ReasonCode
	}
	if v.RuleID != "" {
		doc["rule_id"] = v.RuleID
	}
	b, _ := json.Marshal(doc)
	return mcp.NewToolResultText(string(b))
}

// NewServer returns an MCP server with the permission_prompt tool.
func NewServer(d Decider, version string) *server.MCPServer {
	s := server.NewMCPServer("toolgate", version, server.WithToolCapabilities(false), server.WithRecovery())
	s.AddTool(Tool(d))
	return s
}
