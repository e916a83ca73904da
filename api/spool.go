package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// SpoolLine is one line of a session's spool file: a hook event that had
// to be answered without the daemon (a PreToolUse denied gate_unavailable,
// a PostToolUse that could not be recorded). The hook and toolgate run's
// prompt tool append lines; the daemon puts them in the ledger when it is
// back, and run's report counts the denials.
type SpoolLine struct {
	Time       time.Time       `json:"time"`
	Event      string          `json:"hook_event_name"`
	ToolUseID  string          `json:"tool_use_id,omitempty"`
	ToolName   string          `json:"tool_name,omitempty"`
	AgentID    string          `json:"agent_id,omitempty"`
	Input      json.RawMessage `json:"tool_input,omitempty"` // left out when large
	ReasonCode string          `json:"reason_code"`
	Error      string          `json:"error,omitempty"`
}

// AppendSpool appends one line to a spool file, creating it (0600, in a
// 0700 directory) when needed. The line is one write, so that the lines of
// concurrent hooks never interleave.
func AppendSpool(path string, l SpoolLine) error {
	line, err := json.Marshal(l)
	if err != nil {
		return err
	}
	f, _, err := openRegular(path, syscall.O_NOFOLLOW|os.O_WRONLY|os.O_APPEND|os.O_CREATE)
	if errors.Is(err, fs.ErrNotExist) && os.MkdirAll(filepath.Dir(path), 0o700) == nil {
		f, _, err = openRegular(path, syscall.O_NOFOLLOW|os.O_WRONLY|os.O_APPEND|os.O_CREATE) // no daemon ever ran here
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

// ReadSpool reads a spool file; a line that is not a SpoolLine with a
// tool_use_id is skipped. A missing file is no lines.
func ReadSpool(path string) ([]SpoolLine, error) {
	f, _, err := openRegular(path, syscall.O_NOFOLLOW|os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []SpoolLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 128<<10), 1<<20)
	for sc.Scan() {
		var l SpoolLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.ToolUseID == "" {
			continue
		}
		out = append(out, l)
	}
	return out, sc.Err()
}
