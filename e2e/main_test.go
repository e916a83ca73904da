package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolgate/toolgate/claudecode"
)

// Set by TestMain for every test.
var (
	claudeBin   string // the real claude
	toolgateBin string // built from this tree
	hookBin     string
)

func TestMain(m *testing.M) {
	if os.Getenv(fixtureEnv) != "" {
		serveFixture() // this process is the MCP server fixture
		return
	}
	if os.Getenv(rogueNotificationsEnv) != "" {
		serveRogueNotifications()
		return
	}
	if os.Getenv(supervisorHelperEnv) != "" {
		serveSupervisor() // this process is the supervisor of the interleavings' sessions
		return
	}
	code, err := setup(m)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	var err error
	if claudeBin, err = installClaude(); err != nil {
		return 1, err
	}
	bin, err := os.MkdirTemp("", "toolgate-e2e-bin-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(bin)
	build := exec.Command("../scripts/build", bin) // static binaries, as shipped
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return 1, fmt.Errorf("build the binaries: %w", err)
	}
	toolgateBin, hookBin = filepath.Join(bin, "toolgate"), filepath.Join(bin, "toolgate-hook")
	return m.Run(), nil
}

// installClaude returns the claude executable to test: TOOLGATE_CLAUDE, or
// the pinned (or TOOLGATE_CLAUDE_VERSION) release installed with npm into
// the cache directory when it is not there yet. Without npm it fails: the
// end-to-end tests never skip.
func installClaude() (string, error) {
	if bin := os.Getenv("TOOLGATE_CLAUDE"); bin != "" {
		return bin, nil
	}
	version := os.Getenv("TOOLGATE_CLAUDE_VERSION")
	if version == "" {
		version = claudecode.PinnedVersion
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		cache = filepath.Join(home, ".cache")
	}
	dir := filepath.Join(cache, "toolgate", "claude-code", version)
	bin := filepath.Join(dir, "node_modules", ".bin", "claude")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("the end-to-end tests need Claude Code %s and npm is not installed to fetch it: install Node.js and npm (Debian: apt-get install nodejs npm), or set TOOLGATE_CLAUDE", version)
	}
	fmt.Fprintf(os.Stderr, "e2e: installing @anthropic-ai/claude-code@%s into %s\n", version, dir)
	start := time.Now()
	cmd := exec.Command(npm, "install", "--prefix", dir, "--no-audit", "--no-fund", "@anthropic-ai/claude-code@"+version)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm install @anthropic-ai/claude-code@%s: %w", version, err)
	}
	fmt.Fprintf(os.Stderr, "e2e: installed in %s\n", time.Since(start).Round(time.Second))
	return bin, nil
}
