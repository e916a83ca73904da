package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/modelscript"
)

// readFile is a Read of a file in the project: Claude Code runs it without
// asking anyone (it is auto-allowed) unless a hook says otherwise.
func (w *world) readFile(id, name string) modelscript.ToolUse {
	return modelscript.ToolUse{ID: id, Name: "Read", Input: map[string]string{"file_path": filepath.Join(w.project, name)}}
}

// Claude Code's handling of an http PreToolUse hook, pinned: a verdict in
// a 200 answer decides the call; any failure (an error status, a body that
// is not a verdict, no answer before the hook's timeout, a refused
// connection) is no verdict at all, and an auto-allowed call runs. That
// is why toolgate run's hook endpoint answers every request with 200 and a
// verdict, and denies by itself before the timeout. If a release starts
// refusing calls on a failed hook, this test says so.
func TestClaudeCodeHTTPHookFailures(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.writeFile("notes.txt", "the file's content")
	release := make(chan struct{})
	defer close(release)
	deny := `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no, says the hook"}}`
	tests := []struct {
		name   string
		answer http.HandlerFunc // nil: nothing listens
		ran    bool
	}{
		{"200 with a deny", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, deny) }, false},
		{"500 with a deny", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500); io.WriteString(w, deny) }, true},
		{"403 as a proxy refuses", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "forbidden", 403) }, true},
		{"200, not JSON", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "deny") }, true},
		{"200, empty", func(w http.ResponseWriter, r *http.Request) {}, true},
		{"no answer before the timeout", func(w http.ResponseWriter, r *http.Request) { <-release }, true},
		{"connection refused", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			url := "http://" + ln.Addr().String() + "/hook"
			events := make(chan *http.Request, 4)
			bodies := make(chan []byte, 4)
			if tt.answer == nil {
				ln.Close()
			} else {
				srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					events <- r
					bodies <- body
					tt.answer(w, r)
				})}
				go srv.Serve(ln)
				defer srv.Close()
			}
			settings := `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"http","url":"` + url +
				`","headers":{"Authorization":"Bearer secret-token"},"timeout":2}]}]}}`
			model, err := modelscript.Start([]modelscript.Step{step(w.readFile("toolu_pin_read", "notes.txt"))})
			if err != nil {
				t.Fatal(err)
			}
			defer model.Close()
			cmd := exec.Command(claudeBin, "-p", "--output-format", "json", "--settings", settings, "--", "go")
			cmd.Dir, cmd.Env = w.project, w.env(model)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("claude: %v\n%s", err, out)
			}
			res, ok := model.ToolResults()["toolu_pin_read"]
			if !ok {
				t.Fatal("the model saw no result")
			}
			if ran := strings.Contains(res.Text, "the file's content"); ran != tt.ran {
				t.Errorf("the call ran: %v, want %v (the model saw %q)", ran, tt.ran, res.Text)
			}
			if !tt.ran && !strings.Contains(res.Text, "no, says the hook") {
				t.Errorf("the model saw %q, not the hook's reason", res.Text)
			}
			if tt.answer == nil {
				return
			}
			r, body := <-events, <-bodies
			if r.Method != "POST" || r.Header.Get("Authorization") != "Bearer secret-token" || r.Header.Get("Content-Type") != "application/json" {
				t.Errorf("the hook request: %s %v", r.Method, r.Header)
			}
			var ev struct {
				Event          string `json:"hook_event_name"`
				ToolUseID      string `json:"tool_use_id"`
				TranscriptPath string `json:"transcript_path"`
			}
			if json.Unmarshal(body, &ev) != nil || ev.Event != "PreToolUse" || ev.ToolUseID != "toolu_pin_read" || ev.TranscriptPath == "" {
				t.Errorf("the hook's body: %s", body)
			}
		})
	}
}

// The daemon stalls (stopped) just before a call that Claude Code would
// run unasked: the hook answers deny gate_unavailable at its deadline,
// well before Claude Code's timeout for it, and the call never runs.
func TestStalledGateDeniesAtTheDeadline(t *testing.T) {
	t.Parallel()
	forTransports(t, func(t *testing.T, transport string) {
		w := newWorld(t)
		w.writeFile("notes.txt", "the file's content")
		var daemon int
		stall := func() {
			st, err := w.client().Status(context.Background())
			if err != nil {
				t.Errorf("status: %v", err)
				return
			}
			daemon = st.PID
			syscall.Kill(daemon, syscall.SIGSTOP)
		}
		resume := func() { syscall.Kill(daemon, syscall.SIGCONT) }
		t.Cleanup(func() {
			if daemon != 0 {
				resume()
			}
		})
		script := []modelscript.Step{
			step(bash("toolu_stall_before", "touch before.txt")),
			{ToolUses: []modelscript.ToolUse{w.readFile("toolu_stall_read", "notes.txt")}, Before: stall},
			{Text: "done", Before: resume},
		}
		r := w.run(runArgs{transport: transport, policy: `{"version": 1, "default": "allow", "rules": []}`, script: script})
		if _, err := os.Stat(filepath.Join(w.project, "before.txt")); err != nil {
			t.Fatalf("the gate did not work before it stalled: %v", err)
		}
		res := r.saw(t, "toolu_stall_read")
		if strings.Contains(res.Text, "the file's content") {
			t.Fatalf("the call ran while the gate stalled: the model saw %q", res.Text)
		}
		contains(t, "the model's tool_result", res.Text, "reason_code gate_unavailable")
		if c := r.call(t, "toolu_stall_read"); c.Effect != "deny" || c.ReasonCode != api.ReasonGateUnavailable || c.Executed {
			t.Errorf("report: %+v", c)
		}
		if r.code != 77 || r.report.HookTransport != transport {
			t.Errorf("exit %d (want 77), transport %q", r.code, r.report.HookTransport)
		}
	})
}

// toolgate run is killed with SIGKILL while a call runs: claude dies with
// it (its parent-death signal), so no call after it ever runs, whatever
// the hook's transport (with http hooks, the listener died with run).
func TestKilledRunEndsClaude(t *testing.T) {
	t.Parallel()
	forTransports(t, func(t *testing.T, transport string) {
		w := newWorld(t)
		fifo := filepath.Join(w.root, "release.fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		started, released, further := filepath.Join(w.project, "started"), filepath.Join(w.project, "released"), filepath.Join(w.project, "further")
		script := []modelscript.Step{
			step(bash("toolu_kill_block", "touch started; read line < "+fifo+"; touch released")),
			step(bash("toolu_kill_further", "touch further")),
		}
		running, _ := w.runAsyncCmd(runArgs{transport: transport, policy: `{"version": 1, "default": "allow", "rules": []}`, script: script})
		defer running.cmd.Process.Kill()
		waitFile(t, started)
		calls, err := w.client().Calls(context.Background(), "")
		if err != nil || len(calls) != 1 {
			t.Fatalf("calls %+v %v", calls, err)
		}
		sess, err := w.client().Session(context.Background(), calls[0].SessionID)
		if err != nil || sess.ClaudePID == 0 {
			t.Fatalf("the session's claude: %+v %v", sess, err)
		}
		model := running.model
		turns := model.Turns()
		running.cmd.Process.Kill() // SIGKILL toolgate run
		running.cmd.Wait()
		if !waitGone(sess.ClaudePID, 10*time.Second) {
			t.Fatalf("claude (pid %d) outlived toolgate run", sess.ClaudePID)
		}
		// The call under way goes on (it is the shell's, not claude's);
		// once it is over, nothing is left to propose another.
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("go\n"))
		f.Close()
		waitFile(t, released)
		if _, err := os.Stat(further); err == nil {
			t.Error("a call ran after toolgate run was killed")
		}
		if n := model.Turns(); n != turns {
			t.Errorf("the model was asked for %d more turns after toolgate run was killed", n-turns)
		}
	})
}

// waitFile waits, up to the run timeout, until a file a test's command
// makes exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(runTimeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(20 * time.Millisecond) // polling a file another process makes
	}
}
