// Package e2e holds toolgate's end-to-end tests: the real Claude Code CLI
// (the pinned version, installed with npm into a cache directory when it is
// missing), a scripted Messages API on loopback (package modelscript), a
// small MCP server fixture, and the real toolgate binaries, daemon and
// ledger. Fakes are for the model's replies and the user's MCP server only.
//
// Every test runs in a world of its own (newWorld: its XDG directories, so
// its own daemon and ledger, a HOME and a project) and in parallel with the
// others (t.Parallel, bounded by go test's -parallel): a test that needed
// what another test touches would have to say so and stay serial.
//
// Environment:
//
//	TOOLGATE_CLAUDE_VERSION  the Claude Code version to test (default: the pinned one)
//	TOOLGATE_CLAUDE          a claude executable to use instead of installing one
//	TOOLGATE_ATMOSTONCE_FOR  how long TestRandomInterleavingsRunEachCallAtMostOnce runs (default 20s)
//	XDG_CACHE_HOME           where the CLI is installed (toolgate/claude-code/VERSION)
package e2e
