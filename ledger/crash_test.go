package ledger

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("TOOLGATE_CRASH_DIR"); dir != "" {
		crashHelper(dir, os.Getenv("TOOLGATE_CRASH_ROUND"))
		return
	}
	os.Exit(m.Run())
}

// crashHelper is the child process of TestCrash. It writes to the ledger
// from several goroutines and prints one line for every operation the
// ledger acknowledged, until it is killed. Each line is one write of less
// than PIPE_BUF bytes, so the parent reads whole lines only.
func crashHelper(dir, round string) {
	time.AfterFunc(time.Minute, func() { os.Exit(9) }) // never outlive a parent that forgot us
	l, err := Open(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	var out sync.Mutex
	ack := func(format string, args ...any) {
		out.Lock()
		fmt.Fprintf(os.Stdout, format+"\n", args...) // unbuffered: one write a line
		out.Unlock()
	}
	session := "s" + round
	if _, _, err := l.StartSession(ctx, api.Session{ID: session}); err != nil {
		os.Exit(4)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				id := fmt.Sprintf("toolu_%s_%d_%d", round, w, i)
				input := fmt.Sprintf(`{"command":"echo %d","pad":"%s"}`, i, strings.Repeat("p", 512))
				c, _, err := l.Propose(ctx, api.Call{ToolUseID: id, SessionID: session, ToolName: "Bash", Input: json.RawMessage(input)})
				if err != nil {
					os.Exit(5)
				}
				ack("P %s %s", id, c.InputSHA256)
				switch i % 4 {
				case 1:
					a, _, err := l.CreateApproval(ctx, id, ApprovalRequest{PolicyVersion: 1, Timeout: time.Hour})
					if err != nil {
						os.Exit(6)
					}
					ack("A %s %s", id, a.ID)
					status := []string{api.StatusApproved, api.StatusDenied}[i%8/4]
					decision := map[string]api.Effect{api.StatusApproved: api.EffectAllow, api.StatusDenied: api.EffectDeny}[status]
					if _, _, err := l.Resolve(ctx, api.Decision{ApprovalID: a.ID, Decision: decision, Actor: "user:test", ReasonCode: "r"}); err != nil {
						os.Exit(7)
					}
					ack("R %s %s", a.ID, status)
				case 2:
					if _, err := l.RecordExecution(ctx, id, Execution{Outcome: "ok"}); err != nil {
						os.Exit(8)
					}
					ack("X %s", id)
				}
			}
		}()
	}
	wg.Wait()
}

// TestCrash kills a writing process with SIGKILL at random moments, 20
// times over one ledger, and checks after each that every acknowledged
// record is there, that no terminal status changed, and that the audit
// chain verifies.
func TestCrash(t *testing.T) {
	dir := t.TempDir()
	calls := map[string]string{}    // tool_use_id -> input hash
	approvals := map[string]bool{}  // approval id -> exists
	terminal := map[string]string{} // approval id -> status
	executed := map[string]bool{}
	const rounds = 20
	for round := range rounds {
		lines := runUntilKilled(t, dir, round, time.Duration(20+rand.IntN(300))*time.Millisecond)
		for _, line := range lines {
			f := strings.Fields(line)
			switch f[0] {
			case "P":
				calls[f[1]] = f[2]
			case "A":
				approvals[f[2]] = true
			case "R":
				terminal[f[1]] = f[2]
			case "X":
				executed[f[1]] = true
			}
		}
		l, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		for id, hash := range calls {
			c, err := l.Call(ctx, id)
			if err != nil || c.InputSHA256 != hash {
				t.Fatalf("round %d: acknowledged call %s lost: %v", round, id, err)
			}
			if executed[id] && c.Executions != 1 {
				t.Fatalf("round %d: acknowledged execution of %s: %d executions", round, id, c.Executions)
			}
		}
		for id := range approvals {
			a, err := l.Approval(ctx, id)
			if err != nil {
				t.Fatalf("round %d: acknowledged approval %s lost: %v", round, id, err)
			}
			if want, ok := terminal[id]; ok && a.Status != want {
				t.Fatalf("round %d: approval %s was %s, now %s", round, id, want, a.Status)
			}
		}
		res, err := l.Verify(ctx)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: killed after %d acknowledgements; %d events verify", round, len(lines), res.Events)
	}
	t.Logf("%d rounds: %d calls, %d approvals (%d decided), %d executions acknowledged and found",
		rounds, len(calls), len(approvals), len(terminal), len(executed))
}

// runUntilKilled starts the helper, lets it write for d after its first
// acknowledgement, kills it with SIGKILL and returns the lines it printed.
func runUntilKilled(t *testing.T, dir string, round int, d time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "TOOLGATE_CRASH_DIR="+dir, fmt.Sprintf("TOOLGATE_CRASH_ROUND=%d", round))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	first := make(chan struct{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if len(lines) == 0 {
				close(first)
			}
			lines = append(lines, sc.Text())
		}
	}()
	select {
	case <-first:
	case <-read:
		cmd.Wait()
		t.Fatalf("round %d: the helper exited before writing: %s", round, stderr.String())
	}
	time.Sleep(d) // not synchronisation: the random moment of the crash
	cmd.Process.Signal(syscall.SIGKILL)
	<-read
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("round %d: the helper was not killed (%v): %s", round, err, stderr.String())
	}
	return lines
}
