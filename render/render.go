// Package render is how a tool call reads for a person: one line for a
// list (Summary), or readable lines for a decision (All, and Window to
// show part of them): a Bash command as the command, an Edit as a diff.
// What a person approves is what runs, so tool input (which comes from the
// model) never reaches a terminal as a control sequence, and what a
// terminal would not show (bidi overrides, zero-width characters) is
// shown by name; long lines wrap, never cut, and a window says what lies
// beyond it. It must not import the daemon, the ledger or the policy
// engine.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/charmbracelet/x/ansi"
	"github.com/tidwall/gjson"
)

// Lines shows a tool input for a person in lines at most width wide and
// at most maxLines long: All's first lines, and a last one saying how many
// more there are.
func Lines(tool string, input []byte, width, maxLines int) []string {
	return Window(All(tool, input, width), 0, maxLines, "")
}

// All shows a whole tool input for a person, in lines at most width wide
// (a longer one wraps, its continuations marked ↪): a Bash command as the
// command, an Edit as a diff, a Write as its content, other tools as their
// fields.
func All(tool string, input []byte, width int) []string {
	in := gjson.ParseBytes(input)
	var lines []string
	switch tool {
	case "Bash":
		lines = prefixed("$ ", in.Get("command").String())
		if d := in.Get("description").String(); d != "" {
			lines = append(lines, "# "+d)
		}
	case "Edit":
		lines = append([]string{"edit " + in.Get("file_path").String()}, diff(in.Get("old_string").String(), in.Get("new_string").String())...)
	case "MultiEdit":
		lines = []string{"edit " + in.Get("file_path").String()}
		in.Get("edits").ForEach(func(_, e gjson.Result) bool {
			lines = append(lines, diff(e.Get("old_string").String(), e.Get("new_string").String())...)
			return true
		})
	case "Write":
		lines = append([]string{"write " + in.Get("file_path").String()}, prefixed("│ ", in.Get("content").String())...)
	default:
		lines = fields(in)
	}
	return wrap(lines, width)
}

// Window is lines[top:top+n], marked where lines are left out above or
// below, saying how many and, with how, how to see them: nothing of what
// is approved is hidden without a word.
func Window(lines []string, top, n int, how string) []string {
	if n < 1 {
		n = 1
	}
	top = max(0, min(top, len(lines)-n))
	if len(lines) <= n {
		return lines
	}
	out := make([]string, 0, n)
	first, last := top, top+n
	if top > 0 {
		first++
	}
	if last < len(lines) {
		last--
	}
	if top > 0 {
		out = append(out, fmt.Sprintf("… %d %s above%s", first, noun(first), suffix(how)))
	}
	out = append(out, lines[first:last]...)
	if last < len(lines) {
		out = append(out, fmt.Sprintf("… %d more %s%s", len(lines)-last, noun(len(lines)-last), suffix(how)))
	}
	return out
}

func noun(n int) string {
	if n == 1 {
		return "line"
	}
	return "lines"
}

func suffix(how string) string {
	if how == "" {
		return ""
	}
	return " (" + how + ")"
}

// prefixed splits text into lines, each with prefix.
func prefixed(prefix, text string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		out = append(out, prefix+l)
	}
	return out
}

// diff shows an edit line by line: the lines both sides share at the start
// and the end as context, the rest as removed and added.
func diff(old, new string) []string {
	a, b := strings.Split(old, "\n"), strings.Split(new, "\n")
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	post := 0
	for post < len(a)-pre && post < len(b)-pre && a[len(a)-1-post] == b[len(b)-1-post] {
		post++
	}
	var out []string
	for _, l := range a[:pre] {
		out = append(out, "  "+l)
	}
	for _, l := range a[pre : len(a)-post] {
		out = append(out, "- "+l)
	}
	for _, l := range b[pre : len(b)-post] {
		out = append(out, "+ "+l)
	}
	for _, l := range a[len(a)-post:] {
		out = append(out, "  "+l)
	}
	return out
}

// fields shows an object's fields one per line, strings as they are and
// anything else as compact JSON.
func fields(in gjson.Result) []string {
	if !in.IsObject() {
		return []string{in.Raw}
	}
	m := in.Map()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		v := m[k]
		text := v.String()
		if v.Type != gjson.String {
			var b bytes.Buffer
			if json.Compact(&b, []byte(v.Raw)) == nil {
				text = b.String()
			}
		}
		for i, l := range strings.Split(text, "\n") {
			if i == 0 {
				out = append(out, k+": "+l)
			} else {
				out = append(out, strings.Repeat(" ", len(k)+2)+l)
			}
		}
	}
	return out
}

// wrap breaks the lines longer than width (a continuation starts with
// "↪ "), and makes them printable.
func wrap(lines []string, width int) []string {
	width = max(width, 8)
	var out []string
	for _, l := range lines {
		l = printable(l)
		if ansi.StringWidth(l) <= width {
			out = append(out, l)
			continue
		}
		head := ansi.Cut(l, 0, width)
		out = append(out, head)
		rest := strings.Split(ansi.Hardwrap(ansi.Cut(l, width, ansi.StringWidth(l)), width-2, true), "\n")
		for _, r := range rest {
			out = append(out, "↪ "+r)
		}
	}
	return out
}

// printable replaces what would move the cursor or colour the screen, and
// names what a terminal would not show at all: a bidi override
// (U+202E) that makes "txt.exe" read "exe.txt", a zero-width space
// (U+200B) that makes two commands look alike. A person approves what they
// read, so it must be what runs.
func printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteRune(' ')
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			b.WriteRune('�')
		case invisible(r):
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Printable is s as printable shows it, for text from the model that is
// printed whole (toolgate show).
func Printable(s string) string { return printable(s) }

// invisible reports whether r changes how text reads without being seen:
// format characters (bidi controls, zero-width spaces and joiners, the
// byte order mark, soft hyphens), line and paragraph separators, and
// variation selectors.
func invisible(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Variation_Selector) || r == '\u115f' || r == '\u1160' || r == '\u3164'
}
