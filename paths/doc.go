// Package paths owns where toolgate's processes meet: the runtime
// directory (gate.sock, approve.sock, the daemon lock, the spool), the
// state directory (the ledger, its daemon record, the start lock, the
// log) and the configuration directory, derived from the environment in
// one place (From); the running daemon's record beside its ledger (Live:
// clients reach the daemon that serves the ledger, whatever their own
// environment names); the note a stopping daemon leaves; and how each is
// made and opened safely (0700 directories, regular files only, opened
// without waiting). It imports the standard library and x/sys only: the
// hook binary links it.
package paths
