// Package claudecode is what toolgate knows of the Claude Code CLI's own
// contract (as observed on PinnedVersion, and held by the end-to-end
// tests): the answers a hook prints, the hooks block of a settings file,
// how a hook's command line is quoted, the arguments that would take calls
// around the gate, and the MCP servers a session will start. Both toolgate
// run and toolgate install build Claude Code's settings here, and the hook
// binary answers through it, so it stays lean: the api package, gjson,
// sjson and the standard library, nothing else (the hook's dependency test
// holds it to that). It must not import the daemon, the ledger or the
// policy engine.
package claudecode

// PinnedVersion is the Claude Code release toolgate's contract was
// observed on; the demo installs it, and the end-to-end tests run against
// it unless told otherwise.
const PinnedVersion = "2.1.332"

// OldestTestedVersion is the oldest Claude Code release the end-to-end
// suite has passed on (README, "Compatibility").
const OldestTestedVersion = "2.1.150"
