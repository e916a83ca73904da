package claudecode

import (
	"slices"
	"testing"
)

func TestResumeArgs(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"-p", "fix the test"}, []string{"-p"}},
		{[]string{"-p", "--output-format", "json", "--", "go"}, []string{"-p", "--output-format", "json"}},
		{[]string{"-p", "--model", "opus", "tidy", "up"}, []string{"-p", "--model", "opus"}},
		{[]string{"-p", "--allowedTools", "Bash", "Read", "--", "task"}, []string{"-p", "--allowedTools", "Bash", "Read"}},
		{[]string{"-p", "--allowedTools", "Bash", "Read", "--verbose", "task"}, []string{"-p", "--allowedTools", "Bash", "Read", "--verbose"}},
		{[]string{"-p", "--output-format=json", "task"}, []string{"-p", "--output-format=json"}},
		{[]string{"-p", "--session-id", "1234", "-c", "task"}, []string{"-p"}},
		{[]string{"-p", "--resume", "old", "go on"}, []string{"-p"}},
		{[]string{"--debug", "hooks", "-p", "x"}, []string{"--debug", "hooks", "-p"}},
		{[]string{"--print"}, []string{"--print"}},
	}
	for _, tt := range tests {
		if got := ResumeArgs(tt.args, "sid"); !slices.Equal(got, append(tt.want, "--resume", "sid")) {
			t.Errorf("ResumeArgs(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}
