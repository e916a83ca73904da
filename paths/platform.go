//go:build !linux

package paths

// toolgate runs on Linux only: the daemon and its clients identify each
// other with SO_PEERCRED. This line stops a build for another system and
// says why.
var _ = toolgate_runs_on_Linux_only
