package main

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/claudecode"
	"github.com/toolgate/toolgate/contain"
	"github.com/toolgate/toolgate/demo"
	"github.com/toolgate/toolgate/doctor"
	"github.com/toolgate/toolgate/install"
	"github.com/urfave/cli/v2"
)

// testedClaudeVersions are the Claude Code releases the end-to-end suite
// passed on (README, Compatibility).
var testedClaudeVersions = []string{claudecode.PinnedVersion, claudecode.OldestTestedVersion}

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check the installation and say how to fix what is wrong",
		Description: `Checks claude and its version against the tested ones, the daemon, the sockets'
permissions, the ledger's size, the default policy, the approval timeouts, the hooks in your user and
project Claude Code settings, and the desktop notification bus.

EXAMPLES
   toolgate doctor
   toolgate doctor --json | jq '.checks[] | select(.status != "ok")'

EXIT STATUS
   0    nothing failed (warnings may remain)
   64   bad command line
   69   at least one check failed`,
		Flags: []cli.Flag{
			jsonFlag(),
			&cli.StringFlag{Name: "claude", EnvVars: []string{"TOOLGATE_CLAUDE"}, Value: "claude", Usage: "the claude executable"},
		},
		Action: func(cliCtx *cli.Context) error {
			cwd, _ := os.Getwd()
			home, _ := os.UserHomeDir()
			self, _ := os.Executable()
			claude := cliCtx.String("claude")
			if claude == "claude" {
				if cached := demo.ClaudeCacheDir(claudecode.PinnedVersion) + "/node_modules/.bin/claude"; fileExists(cached) && !onPath("claude") {
					claude = cached
				}
			}
			checks := doctor.Run(cliCtx.Context, doctor.Config{Paths: livePaths(), Policy: policyOrDefault(), Claude: claude, Tested: testedClaudeVersions,
				Cwd: cwd, Home: home, UserSettings: install.UserSettings(os.Getenv, home), DBusAddress: os.Getenv("DBUS_SESSION_BUS_ADDRESS"), ApprovalWait: api.DefaultApprovalTimeout,
				Shell: contain.ShellPath(self)})
			failed := false
			for _, c := range checks {
				failed = failed || c.Status == doctor.Fail
			}
			if cliCtx.Bool("json") {
				if err := writeJSON(cliCtx.App.Writer, struct {
					SchemaVersion int            `json:"schema_version"`
					OK            bool           `json:"ok"`
					Checks        []doctor.Check `json:"checks"`
				}{1, !failed, checks}); err != nil {
					return err
				}
			} else {
				for _, c := range checks {
					fmt.Fprintf(cliCtx.App.Writer, "%-4s  %-16s %s\n", c.Status, c.Name, c.Detail)
					if c.Fix != "" {
						fmt.Fprintf(cliCtx.App.Writer, "      %-16s fix: %s\n", "", c.Fix)
					}
				}
			}
			if failed {
				return &exitStatus{exitUnavailable}
			}
			return nil
		},
	}
}

// policyOrDefault is TOOLGATE_POLICY, or the default policy file.
func policyOrDefault() string {
	if p := os.Getenv(policyEnv); p != "" {
		return p
	}
	return defaultPolicy()
}

func fileExists(path string) bool { _, err := os.Stat(path); return err == nil }

func onPath(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}
