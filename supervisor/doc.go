// Package supervisor is toolgate run: the supervisor of one claude
// process. It validates the policy before anything starts, makes sure the
// daemon is up (client.Ensure), discovers the tools of the session's MCP
// servers, registers a session, serves the http hook endpoint that holds
// an ask until a person decides (or, with --hook-transport command, the
// permission-prompt MCP tool), launches claude with its hooks wired in, forwards
// signals, ends what the session leaves behind, and at the end writes the
// report and picks the exit code.
//
// It talks to the daemon only through package client; the decisions are the
// daemon's. It links mcp-go (the prompt tool, discovery): the hook binary
// must never import it.
package supervisor
