package supervisor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/claudecode"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/internal/clip"
)

// transcriptPoll is how often run reads what claude added to its
// transcripts while it runs.
const transcriptPoll = 500 * time.Millisecond

// transcripts follows claude's transcripts (the transcript_path of its hook
// events) and tells the daemon what became of each call: whether it ran,
// and what the model saw. With http hooks that is all run's hook endpoint
// hears of a call after its verdict: no PostToolUse or PostToolBatch event
// (a blocking request each, for every call) is sent. Claude Code writes its
// transcript a moment after the fact; run reads what is new every
// transcriptPoll, and all of it once claude has exited, before it ends the
// session. Only files under claude's projects directory are read.
type transcripts struct {
	client  *client.Client
	session string
	root    string // claude's projects directory
	// undecided is told the calls that ran although no hook proposed
	// them: Claude Code's hooks do not reach the gate.
	undecided func(ids []string)

	mu     sync.Mutex // guards files and failed; held briefly (add is on every hook's path)
	files  map[string]*transcriptFile
	failed map[string]string

	flushing sync.Mutex    // one flush at a time
	pending  []api.Outcome // read, not yet recorded (flushing)
}

type transcriptFile struct {
	off  int64
	rest []byte // a line not yet complete
	skip bool   // the rest of a line too long to keep is skipped
	tr   claudecode.Transcript
}

func newTranscripts(gate *client.Client, session, claudeDir string) *transcripts {
	t := &transcripts{client: gate, session: session, files: map[string]*transcriptFile{}, failed: map[string]string{}}
	if claudeDir != "" {
		t.root = filepath.Join(claudeDir, "projects") + string(filepath.Separator)
	}
	return t
}

// add follows a transcript from now on; it is called for every hook event.
func (t *transcripts) add(path string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.files[path]; ok {
		return
	}
	if t.root == "" || filepath.Clean(path) != path || !strings.HasPrefix(path, t.root) || !strings.HasSuffix(path, ".jsonl") {
		if _, ok := t.failed[path]; !ok {
			t.failed[path] = "not one of claude's transcripts"
		}
		return
	}
	t.files[path] = &transcriptFile{}
}

// follow records what the transcripts say every transcriptPoll until ctx
// ends.
func (t *transcripts) follow(ctx context.Context) {
	tick := time.NewTicker(transcriptPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// A request cut off once the daemon had it would leave its
		// outcomes pending, to be sent again: the daemon skips them then
		// (api.Outcome.Entry), but the request is let finish all the same.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		t.flush(fctx)
		cancel()
	}
}

// flushTimeout bounds one flush of what the transcripts said.
const flushTimeout = 10 * time.Second

// flush reads what is new in every transcript and records it; what the
// daemon could not take waits for the next flush.
func (t *transcripts) flush(ctx context.Context) error {
	t.flushing.Lock()
	defer t.flushing.Unlock()
	t.mu.Lock()
	mains := make([]string, 0, len(t.files))
	for path := range t.files {
		mains = append(mains, path)
	}
	t.mu.Unlock()
	for _, path := range mains {
		for _, sub := range subagentTranscripts(path) {
			t.add(sub)
		}
	}
	t.mu.Lock()
	files := make(map[string]*transcriptFile, len(t.files))
	for path, f := range t.files {
		files[path] = f
	}
	t.mu.Unlock()
	for path, f := range files {
		if err := f.read(path, func(r claudecode.ToolResult) { t.pending = append(t.pending, outcomeOf(r)) }); err != nil {
			t.mu.Lock()
			t.failed[path] = err.Error()
			t.mu.Unlock()
		}
	}
	if len(t.pending) == 0 {
		return nil
	}
	resp, err := t.client.Outcomes(ctx, t.session, t.pending)
	if err != nil {
		return fmt.Errorf("record what the calls did: %w", err)
	}
	t.pending = nil
	if len(resp.Undecided) > 0 && t.undecided != nil {
		t.undecided(resp.Undecided)
	}
	return nil
}

// subagentTranscripts are the transcripts of the subagents of the session
// whose transcript is path: Claude Code writes each in the session's own
// directory beside it (SESSION.jsonl, SESSION/subagents/agent-ID.jsonl),
// and the hook events of a subagent's calls name the session's. They are
// read as the session's are: what a subagent's calls did is in them
// alone. A subagents directory that is not a directory of its own (a link)
// is not read.
func subagentTranscripts(path string) []string {
	if strings.Contains(path, string(filepath.Separator)+"subagents"+string(filepath.Separator)) {
		return nil
	}
	dir := filepath.Join(strings.TrimSuffix(path, ".jsonl"), "subagents")
	if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(name, "agent-") && strings.HasSuffix(name, ".jsonl") {
			out = append(out, filepath.Join(dir, name))
		}
	}
	return out
}

// problems says which transcripts could not be read: what their calls did
// is then unknown to the audit.
func (t *transcripts) problems() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for path, why := range t.failed {
		out = append(out, fmt.Sprintf("claude's transcript %s could not be read (%s): which of its calls ran is not in the audit", path, why))
	}
	return out
}

// read reads the complete lines added to the file since the last read.
func (f *transcriptFile) read(path string, each func(claudecode.ToolResult)) error {
	// Never block: the transcript is a file of the user's, and the model's
	// code can put a FIFO in its place (whose open waits for a writer).
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if os.IsNotExist(err) {
		return nil // not written yet
	}
	if err != nil {
		return err
	}
	defer fh.Close()
	if st, err := fh.Stat(); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("not a regular file")
	}
	if _, err := fh.Seek(f.off, io.SeekStart); err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(fh, maxTranscriptRead))
	if err != nil {
		return err
	}
	f.off += int64(len(data))
	if f.skip {
		// The rest of a line too long to keep.
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil
		}
		data, f.skip = data[i+1:], false
	}
	data = append(f.rest, data...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		line := data[:i]
		data = data[i+1:]
		// Most lines are neither a tool_use nor a tool_result.
		if bytes.Contains(line, []byte(`"tool_use`)) || bytes.Contains(line, []byte(`"tool_result"`)) {
			for _, r := range f.tr.Line(line) {
				each(r)
			}
		}
	}
	if len(data) > maxTranscriptLine {
		f.rest, f.skip = nil, true
		return fmt.Errorf("a line longer than %d MB", maxTranscriptLine>>20)
	}
	f.rest = append([]byte(nil), data...)
	return nil
}

// maxTranscriptRead bounds what one read of a transcript takes, and
// maxTranscriptLine a line kept while its end is not written yet: the
// model's code can make the file huge.
const (
	maxTranscriptRead = 64 << 20
	maxTranscriptLine = 64 << 20
)

// outcomeOf is what a tool_result tells of its call.
func outcomeOf(r claudecode.ToolResult) api.Outcome {
	o := api.Outcome{ToolUseID: r.ToolUseID, ToolName: r.ToolName, Input: r.Input, Ran: r.Ran(), Seen: r.Text, Entry: r.Entry}
	if o.Ran {
		o.Failed, o.Outcome = r.IsError, "ok"
		if r.IsError {
			o.Outcome = clip.String(r.Text, 200)
		}
	}
	return o
}
