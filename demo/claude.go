package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// ClaudeCacheDir is where a Claude Code version is installed:
// $XDG_CACHE_HOME/toolgate/claude-code/VERSION.
func ClaudeCacheDir(version string) string {
	cache := os.Getenv("XDG_CACHE_HOME")
	if !filepath.IsAbs(cache) {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "toolgate", "claude-code", version)
}

// FindClaude returns the claude of a version installed in the cache, or
// installs it there with npm, saying what it does on progress. Without
// npm it says exactly what to install.
func FindClaude(ctx context.Context, version string, progress io.Writer) (string, error) {
	dir := ClaudeCacheDir(version)
	bin := filepath.Join(dir, "node_modules", ".bin", "claude")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("the pinned Claude Code %s is not installed and npm is not there to install it\n"+
			"Try: install Node.js 18 or newer with npm (Debian: apt-get install nodejs npm), or set TOOLGATE_CLAUDE to a claude executable", version)
	}
	fmt.Fprintf(progress, "toolgate: installing Claude Code %s with npm into %s (about 400 MB, once)…\n", version, dir)
	start := time.Now()
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel", "error",
		"@anthropic-ai/claude-code@"+version)
	cmd.Stdout, cmd.Stderr = progress, progress
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm install @anthropic-ai/claude-code@%s: %w", version, err)
	}
	fmt.Fprintf(progress, "toolgate: installed in %s\n", time.Since(start).Round(time.Second))
	return bin, nil
}
