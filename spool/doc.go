// Package spool is the file a hook event goes to when the daemon cannot
// take it: the hook binary and toolgate run append a line for each call
// they had to answer alone (a PreToolUse denied gate_unavailable), the
// daemon puts those lines in the ledger when it is back, and run's report
// counts them. One file a session, in the runtime directory.
package spool
