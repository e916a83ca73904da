// Package policy owns toolgate's policy document: its JSON Schema, strict
// loading, the decision of allow / ask / deny for one tool call, and the
// validation of tool input against JSON Schemas. It also compares two
// documents (Diff: rules added, removed, changed, reordered, and what
// each change can do to decisions) and replays recorded calls through
// both (Replayer: each as the gate decided it, in its session's working
// directory and home with its MCP servers' schemas), for policy diff.
//
// A document looks like this:
//
//	{"version": 1, "default": "ask",
//	 "rules": [{"id": "deny-env", "effect": "deny", "tool": "Read",
//	            "input": {"file_path": {"const": ".env"}}, "reason_code": "secret_file"}],
//	 "schemas": {"mcp__github__create_pull_request": {"type": "object", ...}},
//	 "tests": [{"name": "env is secret", "call": {"name": "Read", "input": {"file_path": "./.env"}},
//	            "expect": "deny", "rule": "deny-env"}]}
//
// Match order: every deny rule, then every ask rule, then every allow rule;
// within one effect the earlier rule in the file wins; when nothing matched,
// the document's default applies with reason_code "default". A condition the
// matcher cannot decide makes the rule miss when that would allow and match
// when that would deny or ask: unknown never loosens a decision.
//
// The Bash matcher (the command and argument_under conditions) reads what
// package bash makes of a command line (a Script: the commands it runs,
// the words a program may take as paths, and whether the walk saw
// everything) and matches rules against it (command.go, matcher.go,
// argpath.go, pathlist.go); models.go says which options of an allowed
// program are known to be safe. The allow side is checked against the
// real bash by the differential fuzzer in bashdiff_test.go.
//
// The package is pure: it never touches the ledger, sockets or the
// environment. It must not import the ledger.
package policy
