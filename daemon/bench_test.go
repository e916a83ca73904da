package daemon

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
)

// BenchmarkHookSpawn measures what a gated tool call costs Claude Code:
// spawning toolgate-hook with a PreToolUse event until it has printed its
// answer (a real daemon, socket and durable ledger write behind it),
// against spawning /bin/true, the floor, measured in the same run and
// interleaved with it. The hook runs as toolgate install installs it
// (its flags; the daemon found from XDG_RUNTIME_DIR and its record beside
// the ledger, which an installed hook reads at every call; Claude Code's
// session registered at its first event), and as toolgate run
// --hook-transport command starts it (TOOLGATE_SESSION, TOOLGATE_SOCKET).
// Each gets its stdin as a pipe holding the event, as Claude Code gives
// it; the hook gets GOMAXPROCS=1, as its command line (hook.CommandLine)
// gives it.
func BenchmarkHookSpawn(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "toolgate-hook")
	build := exec.Command("go", "build", "-o", bin, "../cmd/toolgate-hook")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as shipped: dynamic linking alone costs 1 ms a spawn
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	p := testPaths(b)
	c := startDaemonInProcess(b, p)
	s, err := c.Register(ctx, api.RegisterRequest{Policy: json.RawMessage(`{"version":1,"default":"allow","rules":[]}`),
		PolicyName: "allow-all", SupervisorPID: os.Getpid()})
	if err != nil {
		b.Fatal(err)
	}
	runEnv := append(hookEnv(), "TOOLGATE_SESSION="+s.ID, "TOOLGATE_SOCKET="+p.Socket(), "GOMAXPROCS=1")
	policy := filepath.Join(b.TempDir(), "policy.json")
	if err := os.WriteFile(policy, []byte(`{"version":1,"default":"allow","rules":[]}`), 0o600); err != nil {
		b.Fatal(err)
	}
	installed := []string{"--policy", policy, "--approval-timeout", "5m"}
	installedEnv := append(hookEnv(), "XDG_RUNTIME_DIR="+filepath.Dir(p.RuntimeDir), "TOOLGATE_STATE_DIR="+p.StateDir,
		"HOME="+b.TempDir(), "CLAUDE_PID="+strconv.Itoa(os.Getpid()), "GOMAXPROCS=1")
	var installedTimes, runTimes, floor []time.Duration
	i := 0
	for b.Loop() {
		i++
		event := `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_b` + strconv.Itoa(i)
		installedTimes = append(installedTimes, spawn(b, bin, installed, installedEnv, `{"session_id":"c-bench",`+event[1:]+`i"}`, true))
		runTimes = append(runTimes, spawn(b, bin, nil, runEnv, event+`"}`, true))
		floor = append(floor, spawn(b, "/bin/true", nil, runEnv, "", false))
	}
	fp50, fp99 := percentile(floor, 50), percentile(floor, 99)
	b.ReportMetric(float64(fp50.Microseconds())/1000, "true_p50_ms")
	b.ReportMetric(float64(fp99.Microseconds())/1000, "true_p99_ms")
	for _, m := range []struct {
		name string
		ds   []time.Duration
	}{{"hook", installedTimes}, {"run_hook", runTimes}} {
		p50, p99 := percentile(m.ds, 50), percentile(m.ds, 99)
		b.ReportMetric(float64(p50.Microseconds())/1000, m.name+"_p50_ms")
		b.ReportMetric(float64(p99.Microseconds())/1000, m.name+"_p99_ms")
		b.ReportMetric(float64(p50)/float64(fp50), m.name+"_x_floor_p50")
	}
}

func spawn(b *testing.B, bin string, args, env []string, stdin string, wantAnswer bool) time.Duration {
	in, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	w.WriteString(stdin)
	w.Close()
	defer in.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdin = in
	var out bytes.Buffer
	cmd.Stdout = &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	d := time.Since(start)
	if wantAnswer && !strings.Contains(out.String(), `"permissionDecision":"allow"`) {
		b.Fatalf("hook answered %q", out.String())
	}
	return d
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

// BenchmarkDaemonRSS measures the daemon's resident memory (a real
// toolgate serve process) idle, and after 100,000 gated calls sent by 16
// concurrent clients. Run it with -benchtime 1x.
func BenchmarkDaemonRSS(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "toolgate")
	build := exec.Command("go", "build", "-o", bin, "../cmd/toolgate")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	for b.Loop() {
		p := testPaths(b)
		serve := exec.Command(bin, "serve")
		serve.Env = append(os.Environ(), "TOOLGATE_RUNTIME_DIR="+p.RuntimeDir, "TOOLGATE_STATE_DIR="+p.StateDir)
		if err := serve.Start(); err != nil {
			b.Fatal(err)
		}
		c := client.NewClient(p.Socket())
		for _, err := c.Status(ctx); err != nil; _, err = c.Status(ctx) {
			time.Sleep(20 * time.Millisecond) // the daemon is starting
		}
		s, err := c.Register(ctx, api.RegisterRequest{Policy: json.RawMessage(testPolicy), PolicyName: "p", SupervisorPID: os.Getpid()})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(rssMB(b, serve.Process.Pid), "idle_rss_MB")
		const calls, clients = 100_000, 16
		var wg sync.WaitGroup
		var next atomic.Int64
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1); i <= calls; i = next.Add(1) {
					ev := pre("toolu_"+strconv.FormatInt(i, 10), "Bash", `{"command":"ls -la `+strconv.FormatInt(i, 10)+`"}`)
					if _, err := c.Hook(ctx, api.HookRequest{SessionID: s.ID, Event: ev}); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(rssMB(b, serve.Process.Pid), "rss_after_100k_MB")
		b.ReportMetric(float64(procField(b, serve.Process.Pid, "VmHWM"))/(1<<20), "peak_rss_MB")
		b.ReportMetric(float64(procField(b, serve.Process.Pid, "RssAnon"))/(1<<20), "anon_after_100k_MB")
		b.ReportMetric(float64(procField(b, serve.Process.Pid, "RssFile"))/(1<<20), "file_after_100k_MB")
		serve.Process.Signal(syscall.SIGTERM)
		serve.Wait()
	}
}

func rssMB(b *testing.B, pid int) float64 { return float64(procField(b, pid, "VmRSS")) / (1 << 20) }

// procField reads a memory figure of a process from /proc, in bytes.
func procField(b *testing.B, pid int, field string) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	b.Fatalf("no %s for %d", field, pid)
	return 0
}
