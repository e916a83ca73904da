package e2e

import (
	"context"
	"fmt"
	"os"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// fixtureEnv makes the test binary serve the MCP fixture on stdio instead
// of running tests; FIXTURE_LOG names the file every tool call is logged to.
const fixtureEnv = "TOOLGATE_E2E_MCP_FIXTURE"

// serveFixture is a user's MCP server: create_pull_request with an input
// schema, and sign_contract, which needs a person at the interactive UI.
// FIXTURE_STARTS names a file it adds a line to each time it starts;
// FIXTURE_HANG=1 makes it a server that never answers.
func serveFixture() {
	if f, err := os.OpenFile(os.Getenv("FIXTURE_STARTS"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
		fmt.Fprintln(f, "started")
		f.Close()
	}
	if os.Getenv("FIXTURE_HANG") == "1" {
		select {} // a server that hangs: it never answers initialize
	}
	s := server.NewMCPServer("gh-fixture", "1.0.0", server.WithToolCapabilities(false))
	pr := mcp.NewTool("create_pull_request",
		mcp.WithDescription("Open a pull request."),
		mcp.WithString("base", mcp.Required()),
		mcp.WithString("head", mcp.Required()),
		mcp.WithString("title", mcp.Required()),
	)
	sign := mcp.NewTool("sign_contract", mcp.WithDescription("Sign a contract."), mcp.WithString("name"))
	sign.Meta = &mcp.Meta{AdditionalFields: map[string]any{"anthropic/requiresUserInteraction": true}}
	logCall := func(name string) server.ToolHandlerFunc {
		return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if f, err := os.OpenFile(os.Getenv("FIXTURE_LOG"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
				fmt.Fprintf(f, "%s %v\n", name, req.GetArguments())
				f.Close()
			}
			return mcp.NewToolResultText("ran " + name), nil
		}
	}
	s.AddTool(pr, logCall("create_pull_request"))
	s.AddTool(sign, logCall("sign_contract"))
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
