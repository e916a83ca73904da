package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/paths"
)

// benchCalls are the calls of the benchmark's sessions, in turn: the docs
// search (ask -> allow between the two policies), pull requests to every
// base, reads, and shell commands.
var benchCalls = []struct{ tool, input string }{
	{"mcp__docs__search", `{"q":"rate limits %d"}`},
	{"mcp__github__create_pull_request", `{"base":"main","head":"fix/%d","title":"t"}`},
	{"mcp__github__create_pull_request", `{"base":"develop","head":"feat/%d","title":"t"}`},
	{"mcp__github__create_pull_request", `{"base":"master","head":"fix/%d","title":"t"}`},
	{"Read", `{"file_path":".env","n":%d}`},
	{"Read", `{"file_path":"src/main_%d.go"}`},
	{"Bash", `{"command":"go test ./... -run T%d","description":"test"}`},
	{"Bash", `{"command":"git push origin feat/%d && echo done","description":"push"}`},
}

// BenchmarkPolicyDiffHistory100k records 100,000 calls in 100 sessions
// through a real toolgate serve (16 clients, as hooks would), then times
// toolgate policy diff --history (a process of its own, through the
// daemon) and --file (on the ledger's audit export), between the design
// article's first policy (testdata/diff/protected-branch-before.json) and
// the shipped one. Run it with -benchtime 1x; -v shows a sample of the output.
func BenchmarkPolicyDiffHistory100k(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "toolgate")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	for b.Loop() {
		env, p := benchDaemon(b, bin)
		recordBenchCalls(b, p, 100_000, 100)
		export := filepath.Join(b.TempDir(), "audit.jsonl")
		timed(b, bin, env, "audit", "export", "-o", export)
		start := time.Now()
		out, rss := timed(b, bin, env, "policy", "diff", articleBefore, protectedBranch, "--history", "--json")
		b.ReportMetric(time.Since(start).Seconds(), "history_s")
		b.ReportMetric(rss, "history_maxrss_MB")
		start = time.Now()
		timed(b, bin, env, "policy", "diff", articleBefore, protectedBranch, "--file", export, "--json")
		b.ReportMetric(time.Since(start).Seconds(), "file_s")
		var d diffJSON
		if err := json.Unmarshal(out, &d); err != nil || d.History.Calls != 100_000 {
			b.Fatalf("report: %v %.200s", err, out)
		}
		b.ReportMetric(float64(d.History.Changed), "changed_calls")
		sample, _ := timed(b, bin, env, "policy", "diff", articleBefore, protectedBranch, "--history", "--limit", "3")
		b.Logf("sample of the output:\n%s", sample)
	}
}

// benchDaemon starts toolgate serve in directories of the benchmark's and
// returns the environment that reaches it.
func benchDaemon(b *testing.B, bin string) ([]string, paths.Paths) {
	rt, err := os.MkdirTemp("", "tgb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(rt) })
	p := paths.Paths{RuntimeDir: filepath.Join(rt, "toolgate"), StateDir: filepath.Join(b.TempDir(), "state")}
	env := append(os.Environ(), "TOOLGATE_RUNTIME_DIR="+p.RuntimeDir, "TOOLGATE_STATE_DIR="+p.StateDir)
	serve := exec.Command(bin, "serve")
	serve.Env = env
	if err := serve.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { serve.Process.Signal(syscall.SIGTERM); serve.Wait() })
	c := client.NewClient(p.Socket())
	for _, err := c.Status(context.Background()); err != nil; _, err = c.Status(context.Background()) {
		time.Sleep(20 * time.Millisecond) // the daemon is starting
	}
	return env, p
}

// recordBenchCalls sends n PreToolUse events in sessions of the design
// article's first policy, 16 at a time.
func recordBenchCalls(b *testing.B, p paths.Paths, n, sessions int) {
	c := client.NewClient(p.Socket())
	doc, err := os.ReadFile(articleBefore)
	if err != nil {
		b.Fatal(err)
	}
	// The sessions' supervisor is a child of the benchmark, as toolgate run
	// is of whoever started it: the benchmark itself, which exports the
	// audit next, is then no process of a gated session (those are refused).
	supervisor := exec.Command("sleep", "3600")
	if err := supervisor.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { supervisor.Process.Kill(); supervisor.Wait() })
	var ids []string
	for i := range sessions {
		s, err := c.Register(context.Background(), api.RegisterRequest{Policy: doc, PolicyName: "protected-branch-before.json",
			SupervisorPID: supervisor.Process.Pid, Cwd: fmt.Sprintf("/work/project%d", i), Home: "/home/u"})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				call := benchCalls[i%int64(len(benchCalls))]
				ev := fmt.Sprintf(`{"hook_event_name":"PreToolUse","tool_use_id":"toolu_%d","tool_name":%q,"tool_input":%s}`,
					i, call.tool, fmt.Sprintf(call.input, i))
				if _, err := c.Hook(context.Background(), api.HookRequest{SessionID: ids[i%int64(sessions)], Event: json.RawMessage(ev)}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// timed runs toolgate and returns its standard output and its peak
// resident memory in MB; exit 80 (the diff loosens) is expected.
func timed(b *testing.B, bin string, env []string, args ...string) ([]byte, float64) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && cmd.ProcessState.ExitCode() != exitLoosens {
		b.Fatalf("toolgate %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var rss float64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = float64(ru.Maxrss) / 1024 // kB
	}
	return out, rss
}
