//go:build !linux

package store

// toolgate runs on Linux only: the daemon identifies callers with
// SO_PEERCRED and /proc, toolgate run is a child subreaper, and the ledger
// syncs with fdatasync. This line stops a build for another system and
// says why.
var _ = toolgate_runs_on_Linux_only
