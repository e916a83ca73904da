package claudecode

import (
	"os"
	"path/filepath"
	"testing"
)

func TestInstalledVersion(t *testing.T) {
	dir := t.TempDir()
	// An npm install: node_modules/.bin/claude -> ../@anthropic-ai/claude-code/bin/claude.exe
	pkg := filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code")
	os.MkdirAll(filepath.Join(pkg, "bin"), 0o755)
	os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name": "@anthropic-ai/claude-code", "version": "2.1.150"}`), 0o644)
	os.WriteFile(filepath.Join(pkg, "bin", "claude.exe"), []byte("#!/bin/sh\n"), 0o755)
	bin := filepath.Join(dir, "node_modules", ".bin")
	os.MkdirAll(bin, 0o755)
	os.Symlink("../@anthropic-ai/claude-code/bin/claude.exe", filepath.Join(bin, "claude"))
	// A native install: ~/.local/bin/claude -> ~/.local/share/claude/versions/2.1.340
	native := filepath.Join(dir, "share", "claude", "versions", "2.1.340")
	os.MkdirAll(filepath.Dir(native), 0o755)
	os.WriteFile(native, []byte("#!/bin/sh\n"), 0o755)
	os.Symlink(native, filepath.Join(dir, "claude-native"))
	// Something else called claude.
	other := filepath.Join(dir, "other", "claude")
	os.MkdirAll(filepath.Dir(other), 0o755)
	os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755)

	for _, tt := range []struct {
		path, want string
		ok         bool
	}{
		{filepath.Join(bin, "claude"), "2.1.150", true},
		{filepath.Join(dir, "claude-native"), "2.1.340", true},
		{other, "", false},
		{filepath.Join(dir, "missing"), "", false},
	} {
		if v, ok := InstalledVersion(tt.path); v != tt.want || ok != tt.ok {
			t.Errorf("%s: %q %v, want %q %v", tt.path, v, ok, tt.want, tt.ok)
		}
	}
}

func TestAtLeast(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"2.1.332", "2.1.332", true}, {"2.1.333", "2.1.332", true}, {"2.2.0", "2.1.332", true},
		{"2.1.150", "2.1.332", false}, {"2.1.40", "2.1.332", false}, {"1.9.999", "2.1.332", false},
	} {
		if got := AtLeast(tt.a, tt.b); got != tt.want {
			t.Errorf("AtLeast(%s, %s) = %v", tt.a, tt.b, got)
		}
	}
}
