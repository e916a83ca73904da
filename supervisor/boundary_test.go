package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What the session's commands made that no mount could pin is moved
// aside: a .mcp.json at once, and at the end a .git/commondir, a nested
// repository and a nested .claude; what was there before stays.
func TestMadeLaterMovesAsideWhatTheSessionMade(t *testing.T) {
	project := t.TempDir()
	for _, d := range []string{".git", "old/.git", "old/.claude"} {
		os.MkdirAll(filepath.Join(project, d), 0o755)
	}
	m := newMadeLater(project, "ses_x")
	for _, d := range []string{"vendor/lib/.git", "sub/.claude/skills/fmt"} {
		os.MkdirAll(filepath.Join(project, d), 0o755)
	}
	os.WriteFile(filepath.Join(project, ".git", "commondir"), []byte("../elsewhere\n"), 0o644)
	os.WriteFile(filepath.Join(project, ".mcp.json"), []byte("{}"), 0o644)
	m.check()
	notes := m.finish()
	for _, gone := range []string{".mcp.json", ".git/commondir", "vendor/lib/.git", "sub/.claude"} {
		if _, err := os.Lstat(filepath.Join(project, gone)); err == nil {
			t.Errorf("%s is still there", gone)
		}
	}
	for _, kept := range []string{".git", "old/.git", "old/.claude"} {
		if _, err := os.Lstat(filepath.Join(project, kept)); err != nil {
			t.Errorf("%s, there before the session, is gone", kept)
		}
	}
	if len(notes) != 4 {
		t.Errorf("notes: %q", notes)
	}
	for _, n := range notes {
		if !strings.Contains(n, "moved to ") || !strings.Contains(n, ".made-by-ses_x-") {
			t.Errorf("note: %s", n)
		}
	}
}
