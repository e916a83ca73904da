// Package supervisor is toolgate run: the supervisor of one claude
// process. It validates the policy before anything starts, makes sure the
// daemon is up (daemon.Ensure), discovers the tools of the session's MCP
// servers, registers a session, hosts the permission-prompt MCP tool for
// it, launches claude with the hook and the prompt tool wired in, forwards
// signals, ends what the session leaves behind, and at the end writes the
// report and picks the exit code.
//
// It talks to the daemon only through package api; the decisions are the
// daemon's. It links mcp-go (the prompt tool, discovery): the hook binary
// must never import it.
package supervisor
