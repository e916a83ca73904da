package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
)

// buildInfo is what the binary knows of how it was built.
type buildInfo struct {
	SchemaVersion int      `json:"schema_version"`
	Version       string   `json:"version"`
	Commit        string   `json:"commit,omitempty"`
	CommitTime    string   `json:"commit_time,omitempty"`
	Modified      bool     `json:"modified,omitempty"` // built from a tree with uncommitted changes
	Go            string   `json:"go"`
	Platform      string   `json:"platform"`
	ClaudeCode    []string `json:"claude_code_tested"` // the pinned release first
}

// readBuildInfo takes the version from -ldflags "-X main.version=...", or
// from go install's module version, and the commit from Go's VCS stamp.
func readBuildInfo() buildInfo {
	b := buildInfo{SchemaVersion: 1, Version: version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		ClaudeCode: testedClaudeVersions}
	b.Commit, b.Modified = strings.CutSuffix(commit, "-dirty")
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if b.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if commit == "" {
				b.Commit = s.Value
			}
		case "vcs.time":
			if commit == "" {
				b.CommitTime = s.Value
			}
		case "vcs.modified":
			if commit == "" {
				b.Modified = s.Value == "true"
			}
		}
	}
	return b
}

func printVersion(w io.Writer) {
	b := readBuildInfo()
	commit := "commit unknown (built without version control information)"
	if b.Commit != "" {
		commit = "commit " + b.Commit[:min(12, len(b.Commit))]
		if b.CommitTime != "" {
			commit += " of " + b.CommitTime
		}
		if b.Modified {
			commit += ", with uncommitted changes"
		}
	}
	fmt.Fprintf(w, "toolgate %s (%s), %s %s\n", b.Version, commit, b.Go, b.Platform)
	fmt.Fprintf(w, "tested with Claude Code %s (pinned), %s\n", b.ClaudeCode[0], strings.Join(b.ClaudeCode[1:], ", "))
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print toolgate's version, commit, and the Claude Code releases it was tested with",
		Description: `The same as toolgate --version. The commit comes from the build (go build in a git
checkout records it); the Claude Code releases are those the end-to-end suite
passed on (claude --version says which one you have; toolgate doctor compares).

EXAMPLES
   toolgate version
   toolgate version --json | jq -r .commit

EXIT STATUS
   0    printed
   64   bad command line`,
		Flags: []cli.Flag{jsonFlag()},
		Action: func(cliCtx *cli.Context) error {
			if cliCtx.Args().Present() {
				return usagef("version takes no arguments")
			}
			if cliCtx.Bool("json") {
				return writeJSON(cliCtx.App.Writer, readBuildInfo())
			}
			printVersion(cliCtx.App.Writer)
			return nil
		},
	}
}
