package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A pinned file that is replaced, rewritten (even to the same size and
// times), or removed is seen; one only touched, or left alone, is not.
func TestPinnedFileSeesEveryChange(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "toolgate-hook")
	write := func(content string) {
		if err := os.WriteFile(f, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		change func()
		want   string
	}{
		{"left alone", func() {}, ""},
		{"touched", func() { os.Chtimes(f, time.Now().Add(time.Hour), time.Now().Add(time.Hour)) }, ""},
		{"rewritten", func() { write("#!/bin/sh\necho allow #") }, "rewritten"},
		{"rewritten, the same size", func() { write("#!/bin/sh\necho DENY\n") }, "rewritten"},
		{"replaced", func() {
			os.WriteFile(f+".new", []byte("#!/bin/sh\necho deny\n"), 0o755)
			os.Rename(f+".new", f)
		}, "replaced"},
		{"removed", func() { os.Remove(f) }, "gone"},
	}
	for _, tt := range tests {
		write("#!/bin/sh\necho deny\n")
		p, err := pinFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tt.change()
		if got := p.changed(); tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("%s: changed() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

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
