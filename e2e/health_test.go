package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/daemon"
	"github.com/toolgate/toolgate/modelscript"
)

// A daemon whose ledger's directory is removed, made read-only or filled,
// or whose runtime directory is removed, cannot serve:
// it says why in its log and stops within daemon.StopBound, and the
// toolgate run it gates at that moment (an ask waiting) ends 69 with the
// reason, instead of waiting on a daemon that retries its writes for ever
// or starting another on a ledger its session was never recorded in.
// (The filesystems are tmpfs mounts the test makes: it runs as root, as
// CI does.)
func TestDaemonStopsWhenItCannotServe(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Fatal("this test mounts tmpfs filesystems and must run as root (CI does)")
	}
	for _, tt := range []struct {
		name  string
		tmpfs bool // the ledger on a tmpfs of its own
		what  func(w *world, mnt string) error
		want  string                           // in the log, run's stderr and its report
		keeps func(w *world, mnt string) error // gives the ledger back, when its files are still there
	}{
		{"its state directory removed", false, func(w *world, _ string) error {
			return os.RemoveAll(filepath.Join(w.root, "state"))
		}, "was removed", nil},
		{"its runtime directory removed", false, func(w *world, _ string) error {
			return os.RemoveAll(w.paths().RuntimeDir)
		}, "the runtime directory", nil},
		// A filesystem with files open for writing cannot be remounted
		// read-only (EBUSY): a read-only bind mount over the ledger's
		// directory makes its path read-only as a remount would.
		{"its directory made read-only", false, func(w *world, _ string) error {
			dir := w.paths().LedgerDir()
			w.t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
			return command("mount", "--bind", "-o", "ro", dir, dir)
		}, "can no longer be written", func(w *world, _ string) error {
			return command("umount", w.paths().LedgerDir())
		}},
		{"its filesystem full", true, func(_ *world, mnt string) error {
			fill(filepath.Join(mnt, "filler"))
			return nil
		}, "has been full", func(_ *world, mnt string) error {
			return os.Remove(filepath.Join(mnt, "filler"))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			env := w.env(nil)
			var mnt string
			if tt.tmpfs {
				mnt = filepath.Join(w.root, "small")
				os.MkdirAll(mnt, 0o700)
				if err := command("mount", "-t", "tmpfs", "-o", "size=96m", "tmpfs", mnt); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
				env = append(env, "TOOLGATE_LEDGER="+filepath.Join(mnt, "ledger"))
			}
			logFile := filepath.Join(w.root, "serve.log") // outside what is removed
			serve := startServe(t, w, env, logFile)
			exited := make(chan struct{})
			go func() { serve.Wait(); close(exited) }()

			l, wait := w.runAsync(runArgs{policy: askTouchPolicy, claudeEnv: env[len(w.env(nil)):],
				script: []modelscript.Step{step(bash("toolu_health", "touch never.txt"))}})
			l.approvalID(t) // a session is registered and an ask waits
			start := time.Now()
			if err := tt.what(w, mnt); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(daemon.StopBound + 30*time.Second): // a bound on a hang
				serve.Process.Kill()
				<-exited
				log, _ := os.ReadFile(logFile)
				t.Fatalf("the daemon still ran %v after it lost %s:\n%s", time.Since(start).Round(time.Second), tt.name, log)
			}
			took := time.Since(start)
			log, _ := os.ReadFile(logFile)
			t.Logf("the daemon exited %v after %s (its bound: %v, and %v more when its filesystem is full); it said:\n%s",
				took.Round(10*time.Millisecond), tt.name, daemon.StopBound, daemon.DiskFullGrace, lastLines(string(log), 4))
			bound := daemon.StopBound
			if strings.Contains(tt.name, "full") {
				bound += daemon.DiskFullGrace
			}
			if took > bound {
				t.Errorf("the daemon exited %v after %s, past its bound of %v", took.Round(10*time.Millisecond), tt.name, bound)
			}
			contains(t, "the daemon's log", string(log), "can no longer serve", tt.want)
			if code := serve.ProcessState.ExitCode(); code != 69 {
				t.Errorf("toolgate serve exited %d, want 69", code)
			}

			r := wait()
			if r.code != 69 {
				t.Errorf("toolgate run exited %d, want 69", r.code)
			}
			contains(t, "toolgate run's stderr", r.stderr, tt.want)
			if !strings.Contains(r.report.GateLost, tt.want) {
				t.Errorf("the report's gate_lost: %q, want it to say %q", r.report.GateLost, tt.want)
			}
			if _, err := os.Stat(filepath.Join(w.project, "never.txt")); err == nil {
				t.Error("the call that waited for a person ran")
			}
			if code, out := w.toolgateIn(env, "daemon", "status"); code != 69 || !strings.Contains(out, tt.want) {
				t.Errorf("daemon status after the stop: exit %d, want 69 and why\n%s", code, out)
			}
			if tt.keeps == nil {
				return
			}
			// Where the files are still there, nothing made durable is
			// lost: once the directory is writable again, the next daemon
			// holds the session's call and a chain that verifies.
			if err := tt.keeps(w, mnt); err != nil {
				t.Fatal(err)
			}
			calls := w.auditIn(env, r.report.SessionID)
			if len(calls) != 1 || calls[0].ToolUseID != "toolu_health" {
				t.Errorf("the audit after %s: %+v, want the call that waited", tt.name, calls)
			}
			if code, out := w.toolgateIn(env, "audit", "verify"); code != 0 {
				t.Errorf("audit verify after %s: exit %d\n%s", tt.name, code, out)
			}
		})
	}
}

// auditIn lists the calls the ledger holds for a session, through the CLI
// with env.
func (w *world) auditIn(env []string, session string) []api.Call {
	w.t.Helper()
	code, out := w.toolgateIn(env, "audit", "--session", session, "--json")
	var doc struct {
		Calls []api.Call `json:"calls"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		w.t.Fatalf("toolgate audit --json: exit %d %v\n%s", code, err, out)
	}
	return doc.Calls
}

// startServe starts toolgate serve in w with env, its log in logFile, and
// returns once it answers.
func startServe(t *testing.T, w *world, env []string, logFile string) *exec.Cmd {
	t.Helper()
	log, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(toolgateBin, "serve")
	cmd.Env, cmd.Stderr = env, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	for deadline := time.Now().Add(runTimeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) { // the daemon is starting
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := w.client().Status(ctx)
		cancel()
		if err == nil {
			return cmd
		}
	}
	t.Fatal("toolgate serve never answered")
	return nil
}

// fill writes to path until its filesystem is full.
func fill(path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			return
		}
	}
}

// command runs a program and returns its failure with its output.
func command(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return &exec.Error{Name: name + " " + strings.Join(args, " ") + ": " + strings.TrimSpace(string(out)), Err: err}
	}
	return nil
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
