// Package bash is toolgate's model of Bash: what one command line runs
// before the shell runs it. Parse reads a command line with
// mvdan.cc/sh and walks the tree node by node (script.go, compound.go,
// expand.go, words.go, heredoc.go, loopvars.go), following what each
// program runs in turn (calls.go, wrappers.go, interpreters.go,
// builtins.go, programs.go) and where relative paths resolve (cwd.go: cd,
// pushd, env -C, and paths resolved as the kernel does, links and all).
//
// The result is a Script: every simple command with the candidates it
// runs (the program itself, what a wrapper or an interpreter runs), the
// words a program may take as paths, the redirections, and two reasons:
// Unknown when the script may run what the walk cannot see (python -c,
// source, a script that does not parse), Unsound when it uses anything
// the walk does not fully understand. Unknown never loosens a decision:
// package policy matches deny and ask rules against an unknown script
// whatever their prefixes, and lets no allow rule vouch for an unsound
// one. ContinuationDiffers says where bash would join lines otherwise
// than the parser does, so that the guard can refuse such a command
// line.
//
// The allow side is checked against the real bash by policy's
// differential fuzzer. The package knows nothing of rules, tools or
// sessions, and never touches the ledger, sockets or the environment; it
// reads the file system only to resolve links.
package bash
