package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Text is cut on a character's boundary, never inside one: what is
// stored and shown stays valid UTF-8, whatever its length.
func TestStringCutsBetweenCharacters(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc…"},
		{"héllo", 2, "h…"}, // é is 2 bytes: byte 2 is inside it
		{"日本語", 4, "日…"},   // 3-byte characters
		{"日本語", 6, "日本…"},
		{"😀x", 3, "…"}, // nothing whole fits
		{"abc", 0, "…"},
	} {
		got := String(tt.s, tt.n)
		if got != tt.want || !utf8.ValidString(got) {
			t.Errorf("String(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
	long := strings.Repeat("é", 1000)
	for n := range 50 {
		if got := String(long, n); !utf8.ValidString(got) || len(got) > n+len("…") {
			t.Errorf("String(é×1000, %d) = %q", n, got)
		}
	}
}
