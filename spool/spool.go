package spool

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/paths"
)

// Line is one line of a session's spool file: a hook event that had
// to be answered without the daemon (a PreToolUse denied gate_unavailable,
// a PostToolUse that could not be recorded). The hook and toolgate run's
// prompt tool append lines; the daemon puts them in the ledger when it is
// back, and run's report counts the denials.
type Line struct {
	Time       time.Time       `json:"time"`
	Event      string          `json:"hook_event_name"`
	ToolUseID  string          `json:"tool_use_id,omitempty"`
	ToolName   string          `json:"tool_name,omitempty"`
	AgentID    string          `json:"agent_id,omitempty"`
	Input      json.RawMessage `json:"tool_input,omitempty"` // left out when large
	ReasonCode string          `json:"reason_code"`
	Error      string          `json:"error,omitempty"`
}

// Unanswered is the line for a hook event (raw, as Claude Code sent it)
// that was answered without the daemon's verdict, with reasonCode and
// cause: the fail-closed record the hook binary and toolgate run's
// endpoint both keep. The tool input is kept when it is small.
func Unanswered(event string, raw []byte, reasonCode string, cause error) Line {
	ev := gjson.ParseBytes(raw)
	l := Line{Time: time.Now().UTC(), Event: event, ReasonCode: reasonCode, Error: cause.Error(),
		ToolUseID: ev.Get("tool_use_id").Str, ToolName: ev.Get("tool_name").Str, AgentID: ev.Get("agent_id").Str}
	if in := ev.Get("tool_input"); in.IsObject() && len(in.Raw) <= maxInput {
		l.Input = json.RawMessage(in.Raw)
	}
	return l
}

// maxInput bounds the tool input kept in a line.
const maxInput = 64 << 10

// Append appends one line to a spool file, creating it (0600, in a
// 0700 directory) when needed. The line is one write, so that the lines of
// concurrent hooks never interleave.
func Append(path string, l Line) error {
	line, err := json.Marshal(l)
	if err != nil {
		return err
	}
	f, _, err := paths.OpenRegular(path, syscall.O_NOFOLLOW|os.O_WRONLY|os.O_APPEND|os.O_CREATE)
	if errors.Is(err, fs.ErrNotExist) && os.MkdirAll(filepath.Dir(path), 0o700) == nil {
		f, _, err = paths.OpenRegular(path, syscall.O_NOFOLLOW|os.O_WRONLY|os.O_APPEND|os.O_CREATE) // no daemon ever ran here
	}
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Read reads a spool file; a line that is not a Line with a
// tool_use_id is skipped. A missing file is no lines.
func Read(path string) ([]Line, error) {
	f, _, err := paths.OpenRegular(path, syscall.O_NOFOLLOW|os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Line
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 128<<10), 1<<20)
	for sc.Scan() {
		var l Line
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.ToolUseID == "" {
			continue
		}
		out = append(out, l)
	}
	return out, sc.Err()
}
