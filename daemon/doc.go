// Package daemon is toolgate serve: the gate daemon, the only process that
// opens the ledger. It serves the protocol of package api over two Unix
// sockets: gate.sock for the hook, the prompt tool and toolgate run
// (sessions, hook events, permission prompts, calls), and approve.sock for
// people and their tools (pending approvals, decisions, the watch stream).
// It reads every caller's uid and pid from the kernel (SO_PEERCRED) and
// refuses other users and browsers.
//
// For each PreToolUse it lets the session decide (policy.Session: tools
// that need a person, the input schema, the policy), then records the
// proposal with that verdict durably, once per tool_use_id, before it
// answers. An ask becomes an approval record, persisted before anyone
// waits; a person decides it through approve.sock (never a process of the
// gated session), or it expires into a deny. Sessions of hooks installed
// in Claude Code's settings register themselves on their first event.
//
// It writes a record beside the ledger naming its runtime directory, so
// that clients whose environment names another find it (paths.Paths.Live),
// and removes it when it stops. A stop (SIGTERM) ends the waits for a
// person at once: their approvals stay pending for the next daemon.
//
// Ensure starts a daemon on demand (toolgate run, the CLI, an installed
// hook), serialized by a lock beside the ledger. The package must not
// import the supervisor.
package daemon
