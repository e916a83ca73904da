// Package examples holds toolgate's example files: the policies (embedded
// here, for toolgate policy init), the cron wrapper, the systemd user units
// and the settings snippet. Nothing but the CLI imports it.
package examples

import "embed"

// Policies are the example policies, by file name under policies/.
//
//go:embed policies/*.json
var Policies embed.FS

// Profiles name the starter policies toolgate policy init writes.
var Profiles = map[string]string{
	"laptop": "policies/developer-laptop.json", // a person is around: unknown calls ask
	"ci":     "policies/unattended-ci.json",    // nobody is: unknown calls are denied
}
