// Package contain is the boundary between the gate and what the model runs.
// Everything the model runs executes as the user, so without one it could
// signal the daemon, toolgate run or an approver, stand in for the gate,
// write the gate's own files, or leave code that runs later outside any
// gate (git hooks, shell rc files, MCP servers). toolgate run gives a
// session three layers, and this package says which this machine offers:
//
//   - A Landlock domain for claude and all it starts (toolgate-hook
//     contain): signals and abstract Unix sockets scoped to the session,
//     no_new_privs. It holds for claude's whole process tree.
//   - A user and mount namespace for claude and all it starts
//     (toolgate-bash --enter): in the project, .git pinned in place, git's
//     config and hooks, .claude and .mcp.json read-only.
//   - The Bash boundary around every command (toolgate-bash.so, run by
//     the dynamic loader in the bash Claude Code starts as its shell; or
//     toolgate-bash, which then executes bash): writes only in the
//     Boundary's trees (Landlock), no Unix socket and no io_uring
//     (seccomp), no capability; with NoNetwork no socket at all. Its
//     description travels in TOOLGATE_BOUNDARY, and Probe tries it once,
//     as the Shell will run, before a session claims it.
//
// Installed sessions, which the user starts, get the Bash boundary per
// command through their settings file's env block (InstalledBoundary), or
// else Claude Code's own Bash sandbox (bubblewrap, socat). Claude Code
// with a sandbox block but without bubblewrap or socat runs every command
// unsandboxed after a warning: SandboxMissing is checked before the block
// is ever written.
package contain
