// Package render is how a tool call reads for a person: one line for a
// list (Summary), or a few readable lines for a decision (Lines): a Bash
// command as the command, an Edit as a diff, long values folded. Tool
// input comes from the model, so nothing it holds reaches a terminal as a
// control sequence. It must not import the daemon, the ledger or the
// policy engine.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/tidwall/gjson"
)

// Lines shows a tool input for a person, in lines at most width wide and
// at most maxLines long (a folded tail says how much was left out): a Bash
// command as the command, an Edit as a diff, a Write as its content, other
// tools as their fields.
func Lines(tool string, input []byte, width, maxLines int) []string {
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
	return fold(lines, width, maxLines)
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

// fold wraps lines to width and keeps at most maxLines of them: the first
// ones, a line saying how many were left out, and the last one (the end of
// a command is where a long, harmless-looking head hides what it does).
// Control characters are shown, never sent to the terminal: tool input
// comes from the model.
func fold(lines []string, width, maxLines int) []string {
	var wrapped []string
	for _, l := range lines {
		wrapped = append(wrapped, strings.Split(ansi.Hardwrap(printable(l), max(width, 1), true), "\n")...)
	}
	if len(wrapped) <= maxLines || maxLines < 3 {
		return wrapped[:min(len(wrapped), max(maxLines, 1))]
	}
	out := append([]string{}, wrapped[:maxLines-2]...)
	out = append(out, fmt.Sprintf("… %d more lines", len(wrapped)-maxLines+1))
	return append(out, wrapped[len(wrapped)-1])
}

// printable replaces what would move the cursor, colour the screen, or
// reorder the text a person reads: Unicode's bidirectional controls make a
// bidi-aware terminal or notification show a command otherwise than it
// runs.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return '�'
		case r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			return '�'
		}
		return r
	}, s)
}
