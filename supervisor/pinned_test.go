package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A pinned file that is replaced, rewritten (even to the same size and
// times), whose mode changed, or removed is seen; one only touched, or left alone, is not.
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
		{"its mode changed", func() { os.Chmod(f, 0o700) }, "mode changed"},
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
