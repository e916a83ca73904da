package render

import (
	"strings"
	"testing"
)

func TestLines(t *testing.T) {
	long := strings.Repeat("x", 200)
	tests := []struct {
		name, tool, input string
		width, max        int
		want              []string
	}{
		{"bash", "Bash", `{"command":"git push origin main","description":"publish"}`, 80, 10,
			[]string{"$ git push origin main", "# publish"}},
		{"bash, several lines", "Bash", `{"command":"set -e\nmake\nmake install"}`, 80, 10,
			[]string{"$ set -e", "$ make", "$ make install"}},
		{"edit as a diff", "Edit", `{"file_path":"/p/main.go","old_string":"a\nb\nc\nd","new_string":"a\nB\nC\nd"}`, 80, 10,
			[]string{"edit /p/main.go", "  a", "- b", "- c", "+ B", "+ C", "  d"}},
		{"edit that only adds", "Edit", `{"file_path":"f","old_string":"x","new_string":"x\ny"}`, 80, 10,
			[]string{"edit f", "  x", "+ y"}},
		{"write, folded: the head and the last line", "Write", `{"file_path":"f","content":"1\n2\n3\n4\n5\n"}`, 80, 4,
			[]string{"write f", "│ 1", "… 3 more lines", "│ 5"}},
		{"other tools: fields", "mcp__gh__create_pull_request", `{"title":"T","base":"main","draft":false,"labels":["a","b"]}`, 80, 10,
			[]string{"base: main", "draft: false", "labels: [\"a\",\"b\"]", "title: T"}},
		{"a long value wraps at the width", "Bash", `{"command":"` + long[:50] + `"}`, 20, 10,
			[]string{"$ " + strings.Repeat("x", 18), strings.Repeat("x", 20), strings.Repeat("x", 12)}},
		{"and keeps its end when it is longer", "Bash", `{"command":"` + long + `"}`, 20, 4,
			[]string{"$ " + strings.Repeat("x", 18), strings.Repeat("x", 20), "… 8 more lines", strings.Repeat("x", 2)}},
		// Tool input comes from the model: no escape sequence reaches the terminal.
		{"control characters", "Bash", `{"command":"echo ok\u001b[8m rm -rf ~\u001b[0m"}`, 80, 10,
			[]string{"$ echo ok�[8m rm -rf ~�[0m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Lines(tt.tool, []byte(tt.input), tt.width, tt.max)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestSummary(t *testing.T) {
	for _, tt := range []struct {
		tool, input string
		n           int
		want        string
	}{
		{"Bash", `{"command":"git   push\n origin"}`, 60, "git push origin"},
		{"Read", `{"file_path":"/etc/passwd"}`, 60, "/etc/passwd"},
		{"mcp__x__y", `{"a": 1}`, 60, `{"a":1}`},
		{"Bash", `{"command":"ls \u001b]0;pwned\u0007"}`, 60, "ls �]0;pwned�"},
		{"Bash", `{"command":"` + strings.Repeat("y", 50) + `"}`, 10, "yyyy…yyyyy"}, // the head and the tail
	} {
		if got := Summary(tt.tool, []byte(tt.input), tt.n); got != tt.want {
			t.Errorf("Summary(%s, %d) = %q, want %q", tt.input, tt.n, got, tt.want)
		}
	}
}
