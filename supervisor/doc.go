// Package supervisor is toolgate's daemon and its supervisor of claude.
//
// The daemon (Daemon, run by toolgate serve) is the only process that
// opens the ledger. It serves the protocol of package api on gate.sock:
// the hook's events, the permission prompt, sessions and calls. For each
// PreToolUse it records the proposal durably before it answers, enforces
// once-per-tool_use_id, validates the input against the tool's JSON Schema,
// and lets the session's policy decide.
//
// Run (toolgate run) supervises one claude process: it makes sure the
// daemon is up, registers a session, hosts the permission-prompt MCP tool
// for it, launches claude with the hook and the prompt tool wired in,
// forwards signals, and at the end writes the report and picks the exit
// code.
//
// This package depends on badger (through the ledger), the policy engine
// and mcp-go: the hook binary must never import it.
package supervisor
