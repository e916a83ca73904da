//go:build !linux

package contain

// toolgate runs on Linux only: run contains claude with Landlock and
// PR_SET_PDEATHSIG, the daemon identifies callers with SO_PEERCRED, and the
// ledger syncs with fdatasync. This line stops a build for another system and
// says why.
var _ = toolgate_runs_on_Linux_only
