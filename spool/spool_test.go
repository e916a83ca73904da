package spool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/api"
)

func TestUnansweredKeepsTheCallAndOnlyASmallInput(t *testing.T) {
	small := `{"tool_use_id":"toolu_1","tool_name":"Bash","agent_id":"a1","tool_input":{"command":"ls"}}`
	l := Unanswered(api.PreToolUse, []byte(small), api.ReasonGateUnavailable, errors.New("no daemon"))
	if l.ToolUseID != "toolu_1" || l.ToolName != "Bash" || l.AgentID != "a1" || string(l.Input) != `{"command":"ls"}` ||
		l.ReasonCode != api.ReasonGateUnavailable || l.Error != "no daemon" || l.Event != api.PreToolUse {
		t.Fatalf("line = %+v", l)
	}
	large := `{"tool_use_id":"toolu_2","tool_name":"Write","tool_input":{"content":"` + strings.Repeat("x", maxInput) + `"}}`
	if l := Unanswered(api.PreToolUse, []byte(large), api.ReasonGateUnavailable, errors.New("x")); l.Input != nil || l.ToolUseID != "toolu_2" {
		t.Fatalf("a large input was kept, or the call lost: %+v", l.ToolUseID)
	}
}

func TestAppendThenReadSkipsWhatIsNotALine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool", "s1")
	for _, id := range []string{"toolu_1", "", "toolu_2"} {
		if err := Append(path, Line{ToolUseID: id, ReasonCode: api.ReasonGateUnavailable}); err != nil {
			t.Fatal(err)
		}
	}
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("not json\n")
	f.Close()
	lines, err := Read(path)
	if err != nil || len(lines) != 2 || lines[0].ToolUseID != "toolu_1" || lines[1].ToolUseID != "toolu_2" {
		t.Fatalf("Read = %+v, %v", lines, err)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Fatalf("spool file mode %v, want 0600", info.Mode().Perm())
	}
}

// A link put where a spool file goes is not followed: the model's code
// could otherwise make the hook append to a file of its choosing.
func TestAppendRefusesALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, nil, 0o600)
	link := filepath.Join(dir, "s1")
	os.Symlink(target, link)
	if err := Append(link, Line{ToolUseID: "toolu_1"}); err == nil {
		t.Fatal("Append followed a link")
	}
	if data, _ := os.ReadFile(target); len(data) != 0 {
		t.Fatalf("the link's target was written: %q", data)
	}
	if lines, err := Read(link); err == nil || lines != nil {
		t.Fatalf("Read followed a link: %v %v", lines, err)
	}
}
