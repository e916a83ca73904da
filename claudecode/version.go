package claudecode

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// TranscriptRanSince is the first release whose transcript toolgate knows
// to say, for every tool_result, whether Claude Code's permission flow let
// the call run (permissionDecision): observed on 2.1.332, absent on
// 2.1.150. toolgate run learns what ran from the transcript only on such a
// release (the http hook transport); on an older one it keeps the
// PostToolUse hooks (the command transport).
const TranscriptRanSince = PinnedVersion

// InstalledVersion is the version of the Claude Code executable claude
// (a name looked up in PATH, or a path), read from where it is installed:
// the package.json of an npm install, or the file name of a native
// install (…/claude/versions/X.Y.Z). ok is false when it cannot be told.
func InstalledVersion(claude string) (version string, ok bool) {
	path, err := exec.LookPath(claude)
	if err == nil {
		path, err = filepath.EvalSymlinks(path)
	}
	if err != nil {
		return "", false
	}
	if v := filepath.Base(path); filepath.Base(filepath.Dir(path)) == "versions" && validVersion(v) {
		return v, true
	}
	dir := filepath.Dir(path)
	for range 3 {
		data, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err == nil {
			var pkg struct{ Name, Version string }
			if json.Unmarshal(data, &pkg) == nil && pkg.Name == "@anthropic-ai/claude-code" && validVersion(pkg.Version) {
				return pkg.Version, true
			}
		}
		dir = filepath.Dir(dir)
	}
	return "", false
}

// AtLeast reports whether version a is b or later (both X.Y.Z).
func AtLeast(a, b string) bool {
	pa, pb := versionParts(a), versionParts(b)
	for i := range pa {
		if pa[i] != pb[i] {
			return pa[i] > pb[i]
		}
	}
	return true
}

func validVersion(v string) bool {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil {
			return false
		}
	}
	return true
}

func versionParts(v string) [3]int {
	var out [3]int
	for i, p := range strings.SplitN(v, ".", 3) {
		out[i], _ = strconv.Atoi(p)
	}
	return out
}
