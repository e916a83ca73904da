package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/toolgate/toolgate/modelscript"
)

// terminal is what a program wrote to a pseudo-terminal, as text.
type terminal struct {
	mu      sync.Mutex
	text    strings.Builder
	changed chan struct{}
}

// escapes are the terminal's control sequences: CSI, OSC and the short ones.
var escapes = regexp.MustCompile(`\x1b\[[0-9;?<=>]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\r`)

func readTerminal(ptmx io.Reader) *terminal {
	term := &terminal{changed: make(chan struct{}, 1)}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := ptmx.Read(buf)
			term.mu.Lock()
			term.text.WriteString(escapes.ReplaceAllString(string(buf[:n]), ""))
			term.mu.Unlock()
			select {
			case term.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return term
}

// waitFor waits until everything in parts was on the screen since from,
// and returns where the screen's text ends now.
func (term *terminal) waitFor(t *testing.T, from int, parts ...string) int {
	t.Helper()
	timeout := time.After(runTimeout)
	for {
		term.mu.Lock()
		text := term.text.String()
		term.mu.Unlock()
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(text[from:], p)
		}
		if ok {
			return len(text)
		}
		select {
		case <-term.changed:
		case <-timeout:
			t.Fatalf("the screen never showed %q; it showed:\n%s", parts, text[from:])
		}
	}
}

// toolgate watch on a terminal (a real pseudo-terminal, 80×24): it lists a
// real gated session's ask; it reconnects by itself when the daemon is
// killed and started again; "a" approves the ask and the call runs; "d", a
// typed reason and Enter deny the next one, whose note stays in the audit.
func TestWatchScreen(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	l, wait := w.runAsync(runArgs{policy: askTouchPolicy, script: []modelscript.Step{
		step(bash("toolu_e2e_tui1", "touch tui-approved.txt")), step(bash("toolu_e2e_tui2", "touch tui-denied.txt"))}})
	first := l.approvalID(t)
	watch := exec.Command(toolgateBin, "watch")
	watch.Env = append(w.env(nil), "TERM=xterm-256color")
	ptmx, err := pty.StartWithSize(watch, &pty.Winsize{Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer watch.Process.Kill()
	term := readTerminal(ptmx)
	at := term.waitFor(t, 0, "toolgate watch — 1 waiting", first, "$ touch tui-approved.txt", "rule ask-touch · reason_code needs_review")
	// The daemon dies while the ask waits: the screen says so, and
	// reconnects by itself once toolgate run has started it again.
	st, err := w.client().Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	syscall.Kill(st.PID, syscall.SIGKILL)
	at = term.waitFor(t, at, "the daemon is not reachable")
	at = term.waitFor(t, at, "connected")
	ptmx.Write([]byte("a")) // the same approval: it survived the daemon
	second := l.approvalID(t)
	at = term.waitFor(t, at, "approved by user:", second, "$ touch tui-denied.txt")
	ptmx.Write([]byte("d"))
	at = term.waitFor(t, at, "deny, with a reason")
	ptmx.Write([]byte("not today\r"))
	term.waitFor(t, at, "denied by user:")
	r := wait()
	if r.code != 77 {
		t.Fatalf("exit %d, want 77 (one approved, one denied)", r.code)
	}
	if _, err := os.Stat(filepath.Join(w.project, "tui-approved.txt")); err != nil {
		t.Error("the call approved with a did not run")
	}
	if _, err := os.Stat(filepath.Join(w.project, "tui-denied.txt")); err == nil {
		t.Error("the call denied with d ran")
	}
	_, show := w.toolgate("show", second)
	contains(t, "toolgate show", show, "denied by user:", "note: not today")
	ptmx.Write([]byte("q"))
	if err := watch.Wait(); err != nil {
		t.Errorf("watch after q: %v", err)
	}
}

// What an approver sees is what runs: the model's bidi override and
// zero-width space show by name in run's waiting line and on watch's
// screen, and a script longer than the screen says how much more there is
// and scrolls to its tail before anyone decides.
func TestApproverSeesWhatRuns(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	script := "cat notes\u202etxt.sh\n"
	for i := range 60 {
		script += fmt.Sprintf("echo step %d\n", i)
	}
	script += "touch tail-ran.txt # r\u200bm the tail"
	l, wait := w.runAsync(runArgs{policy: `{"version": 1, "default": "ask", "rules": []}`,
		script: []modelscript.Step{step(bash("toolu_e2e_bidi", script))}})
	waiting := l.waiting(t)
	id, _, _ := strings.Cut(strings.TrimPrefix(waiting, "toolgate: waiting for approval "), " ")
	if !strings.Contains(waiting, "notes⟨U+202E⟩txt.sh") || !strings.Contains(waiting, "toolgate show "+id+" shows it whole") {
		t.Errorf("run's waiting line: %q", waiting)
	}
	_, show := w.toolgate("show", id)
	contains(t, "toolgate show", show, "$ cat notes⟨U+202E⟩txt.sh", "$ echo step 59", "$ touch tail-ran.txt # r⟨U+200B⟩m the tail")

	watch := exec.Command(toolgateBin, "watch")
	watch.Env = append(w.env(nil), "TERM=xterm-256color")
	ptmx, err := pty.StartWithSize(watch, &pty.Winsize{Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer watch.Process.Kill()
	term := readTerminal(ptmx)
	at := term.waitFor(t, 0, "$ cat notes⟨U+202E⟩txt.sh", "more lines (PgDn/PgUp to read it all)")
	for range 10 {
		ptmx.Write([]byte("\x1b[6~")) // PgDn
	}
	at = term.waitFor(t, at, "$ touch tail-ran.txt # r⟨U+200B⟩m the tail", "lines above (PgDn/PgUp to read it all)")
	ptmx.Write([]byte("d"))
	at = term.waitFor(t, at, "deny, with a reason")
	ptmx.Write([]byte("hidden tail\r"))
	term.waitFor(t, at, "denied by user:")
	r := wait()
	if r.code != 77 {
		t.Errorf("exit %d, want 77", r.code)
	}
	if _, err := os.Stat(filepath.Join(w.project, "tail-ran.txt")); err == nil {
		t.Error("the denied script ran")
	}
	term.mu.Lock()
	defer term.mu.Unlock()
	if strings.ContainsAny(term.text.String()+r.stderr, "\u202e\u200b") {
		t.Error("an invisible character reached a terminal")
	}
}
