package render

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"
)

// Summary shows a tool input on one line for a person: a Bash command as
// the command, a file tool as its path, anything else as compact JSON; at
// most n characters, control characters replaced. A longer one keeps its
// head and its tail, where what a command does at last would hide.
func Summary(tool string, input []byte, n int) string {
	var s string
	switch {
	case tool == "Bash":
		s = gjson.GetBytes(input, "command").String()
	case gjson.GetBytes(input, "file_path").Exists():
		s = gjson.GetBytes(input, "file_path").String()
	default:
		var b bytes.Buffer
		if json.Compact(&b, input) == nil {
			s = b.String()
		} else {
			s = string(input)
		}
	}
	s = printable(strings.Join(strings.Fields(s), " "))
	if r := []rune(s); len(r) > n {
		head := (n - 1) / 2
		s = string(r[:head]) + "…" + string(r[len(r)-(n-1-head):])
	}
	return s
}

// Clipped reports whether Summary(tool, input, n) leaves part of what
// would run out: cut at n, a Bash script of several lines (Summary joins
// them), or a file tool's content (Summary shows only its path). Then a
// person must be told where to read it whole.
func Clipped(tool string, input []byte, n int) bool {
	in := gjson.ParseBytes(input)
	switch {
	case len([]rune(Summary(tool, input, 1<<30))) > n:
		return true
	case tool == "Bash":
		return strings.Contains(strings.TrimSpace(in.Get("command").String()), "\n")
	case in.Get("file_path").Exists():
		return len(in.Map()) > 1
	}
	return false
}
