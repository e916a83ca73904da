// Package clip shortens text for people and records: to at most a number
// of bytes, never inside a UTF-8 character, with an ellipsis that says
// something was cut.
package clip

import "unicode/utf8"

// String is s when it is at most n bytes long; otherwise its first n
// bytes or fewer, cut before the character n would split, and "…".
func String(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < 0 {
		n = 0
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
