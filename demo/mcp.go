package demo

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// ServeMCP serves the demo's MCP server on stdio: a user's server with one
// tool, create_pull_request, whose input schema the gate enforces.
func ServeMCP() error {
	s := server.NewMCPServer("demo-github", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("create_pull_request",
		mcp.WithDescription("Open a pull request."),
		mcp.WithString("base", mcp.Required(), mcp.Description("The branch to merge into.")),
		mcp.WithString("head", mcp.Required(), mcp.Description("The branch with the changes.")),
		mcp.WithString("title", mcp.Required()),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("opened a pull request (not really: this is the demo)"), nil
	})
	return server.ServeStdio(s)
}
