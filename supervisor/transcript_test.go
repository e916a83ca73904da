package supervisor

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/claudecode"
)

// What claude writes to its transcript reaches the daemon as outcomes, as
// it is written: a line cut in two is read once whole, and a file outside
// claude's projects directory is never read.
func TestTranscriptsReportOutcomes(t *testing.T) {
	var mu sync.Mutex
	var got []api.Outcome
	r := fakeDaemon(t, func(w http.ResponseWriter, req *http.Request) {
		var or api.OutcomesRequest
		if req.URL.Path != "/v1/sessions/ses_test/outcomes" || json.NewDecoder(req.Body).Decode(&or) != nil {
			http.Error(w, "bad", 400)
			return
		}
		mu.Lock()
		got = append(got, or.Outcomes...)
		mu.Unlock()
		w.Write([]byte("{}"))
	})
	data, err := os.ReadFile("../claudecode/testdata/transcript-2.1.332.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	claudeDir := t.TempDir()
	path := filepath.Join(claudeDir, "projects", "-work-x-proj", "s.jsonl")
	os.MkdirAll(filepath.Dir(path), 0o700)
	tr := newTranscripts(r.client, r.session, claudeDir)
	outside := filepath.Join(t.TempDir(), "forged.jsonl")
	os.WriteFile(outside, data, 0o600)
	tr.add(outside)
	tr.add(path)
	tr.add(path)
	ctx := context.Background()
	if err := tr.flush(ctx); err != nil { // nothing written yet
		t.Fatal(err)
	}
	half := len(data) / 2
	for _, part := range [][]byte{data[:half], data[half:]} {
		f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		f.Write(part)
		f.Close()
		if err := tr.flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	byID := map[string]api.Outcome{}
	for _, o := range got {
		if _, dup := byID[o.ToolUseID]; dup {
			t.Errorf("%s reported twice", o.ToolUseID)
		}
		byID[o.ToolUseID] = o
	}
	if len(byID) != 12 {
		t.Fatalf("%d outcomes, want 12: %+v", len(byID), got)
	}
	if o := byID["toolu_a4"]; !o.Ran || !o.Failed || o.Outcome != "Exit code 1" || o.ToolName != "Bash" {
		t.Errorf("a call that ran and failed: %+v", o)
	}
	if o := byID["toolu_a2"]; !o.Ran || o.Failed || o.Seen != "in.txt\nlog.txt" {
		t.Errorf("a call that ran: %+v", o)
	}
	if o := byID["toolu_r3"]; o.Ran || !strings.Contains(o.Seen, "hook error: NOPE") {
		t.Errorf("a call a hook denied: %+v", o)
	}
	if p := tr.problems(); len(p) != 1 || !strings.Contains(p[0], outside) {
		t.Errorf("problems: %q", p)
	}
}

// The model's code can make claude's transcript huge (a sparse file of
// terabytes, without a newline): run reads it in bounded steps and keeps a
// bounded line, and says the transcript could not be read, instead of
// taking it all in memory (which would end run, and claude with it).
func TestTranscriptReadIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(`{"type":"user"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 3*maxTranscriptRead); err != nil {
		t.Fatal(err)
	}
	var f transcriptFile
	var failed error
	for range 3 {
		before := f.off
		err := f.read(path, func(claudecode.ToolResult) {})
		failed = cmp.Or(failed, err)
		if f.off-before > maxTranscriptRead {
			t.Fatalf("one read took %d bytes", f.off-before)
		}
		if len(f.rest) > maxTranscriptLine {
			t.Fatalf("a line of %d bytes kept", len(f.rest))
		}
	}
	if failed == nil {
		t.Error("a line past the bound read as if nothing were wrong")
	}
}

// A session's subagents' transcripts are found beside the session's own,
// and only there: never through a link, never for a subagent's own
// transcript, never a file that is not one.
func TestSubagentTranscriptsAreFoundBesideTheSessions(t *testing.T) {
	dir := t.TempDir()
	session := filepath.Join(dir, "s1.jsonl")
	subs := filepath.Join(dir, "s1", "subagents")
	os.MkdirAll(subs, 0o700)
	for _, name := range []string{"agent-a.jsonl", "agent-b.jsonl", "agent-c.meta.json", "notes.jsonl"} {
		os.WriteFile(filepath.Join(subs, name), nil, 0o600)
	}
	got := subagentTranscripts(session)
	want := []string{filepath.Join(subs, "agent-a.jsonl"), filepath.Join(subs, "agent-b.jsonl")}
	if !slices.Equal(got, want) {
		t.Errorf("found %v, want %v", got, want)
	}
	if got := subagentTranscripts(want[0]); got != nil {
		t.Errorf("a subagent's transcript has subagents: %v", got)
	}
	// Another session's subagents directory is a link elsewhere.
	elsewhere := t.TempDir()
	os.WriteFile(filepath.Join(elsewhere, "agent-x.jsonl"), nil, 0o600)
	os.MkdirAll(filepath.Join(dir, "s2"), 0o700)
	os.Symlink(elsewhere, filepath.Join(dir, "s2", "subagents"))
	if got := subagentTranscripts(filepath.Join(dir, "s2.jsonl")); got != nil {
		t.Errorf("followed a link to %v", got)
	}
}
