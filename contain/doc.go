// Package contain is the boundary between the gate and what the model runs.
// Everything the model runs executes as the user, so without one it could
// signal the daemon, toolgate run or an approver, stand in for the gate,
// or write the gate's own files. Two boundaries exist on Linux, and this
// package says which this machine offers:
//
//   - Landlock (toolgate run, the default where the kernel has ABI 6):
//     claude starts inside a domain that scopes signals and abstract Unix
//     sockets and carries no_new_privs. It holds for claude's whole process
//     tree, detached or not, and costs nothing measurable.
//   - Claude Code's own sandbox for the Bash tool (bubblewrap, socat): a
//     PID namespace, no AF_UNIX sockets, writes only under the project (and
//     never to the paths toolgate denies), network through a proxy. It
//     covers only Bash, and changes what commands may do, so toolgate run
//     adds it only when asked (--containment strict); toolgate install
//     writes it for interactive sessions, which Landlock cannot reach.
//
// Claude Code with a sandbox block but without bubblewrap or socat runs
// every command unsandboxed after a warning: SandboxMissing is checked
// before the block is ever written.
package contain
