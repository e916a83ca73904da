package claudecode

import (
	"bufio"
	"os"
	"testing"
)

// Lines of two real transcripts (Claude Code 2.1.332, paths rewritten): a
// session whose PreToolUse hook allowed every call (toolu_a*: Bash writes,
// ls, a Read, a Bash that failed, two calls in one message) and one whose
// hook denied every call (toolu_r*).
func TestTranscript(t *testing.T) {
	f, err := os.Open("testdata/transcript-2.1.332.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var tr Transcript
	got := map[string]ToolResult{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		for _, r := range tr.Line(sc.Bytes()) {
			got[r.ToolUseID] = r
		}
	}
	want := map[string]struct {
		ran, isErr bool
		tool, text string
	}{
		"toolu_a1": {true, false, "Bash", "(Bash completed with no output)"},
		"toolu_a2": {true, false, "Bash", "in.txt\nlog.txt"},
		"toolu_a3": {true, false, "Read", "1\thello\n2\t"},
		"toolu_a4": {true, true, "Bash", "Exit code 1"},
		"toolu_a5": {true, false, "Bash", "(Bash completed with no output)"},
		"toolu_a6": {true, false, "Bash", "(Bash completed with no output)"},
		"toolu_r1": {false, true, "Bash", "PreToolUse:Bash hook error: NOPE"},
		"toolu_r3": {false, true, "Read", "PreToolUse:Read hook error: NOPE"},
		"toolu_r6": {false, true, "Bash", "PreToolUse:Bash hook error: NOPE"},
	}
	entries := map[string]bool{}
	for id, w := range want {
		r, ok := got[id]
		if !ok {
			t.Errorf("%s: no tool result", id)
			continue
		}
		if len(r.Entry) != 36 || entries[r.Entry] {
			t.Errorf("%s: entry %q, want the uuid of its own transcript entry", id, r.Entry)
		}
		entries[r.Entry] = true
		if r.Ran() != w.ran || r.IsError != w.isErr || r.ToolName != w.tool || r.Text != w.text || len(r.Input) == 0 {
			t.Errorf("%s: %+v, want ran %v, is_error %v, %s, %q", id, r, w.ran, w.isErr, w.tool, w.text)
		}
	}
	if len(got) != 12 {
		t.Errorf("%d tool results, want 12", len(got))
	}
	for _, junk := range []string{``, `not json`, `{"type":"user","message":{"content":"text"}}`, `{"type":"queue-operation"}`} {
		if r := tr.Line([]byte(junk)); r != nil {
			t.Errorf("%q: %+v", junk, r)
		}
	}
}
