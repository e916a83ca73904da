package supervisor

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/supervisor/api"
)

// BenchmarkHookSpawn measures what a gated tool call costs Claude Code:
// spawning toolgate-hook with a PreToolUse event until it has printed its
// answer (a real daemon, socket and durable ledger write behind it),
// against spawning /bin/true, the floor, measured in the same run and
// interleaved with it.
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
	env := append(os.Environ(), "TOOLGATE_SESSION="+s.ID, "TOOLGATE_SOCKET="+p.Socket())
	var hook, floor []time.Duration
	i := 0
	for b.Loop() {
		i++
		event := `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_b` + strconv.Itoa(i) + `"}`
		hook = append(hook, spawn(b, bin, env, event, true))
		floor = append(floor, spawn(b, "/bin/true", env, "", false))
	}
	hp50, hp99 := percentile(hook, 50), percentile(hook, 99)
	fp50, fp99 := percentile(floor, 50), percentile(floor, 99)
	b.ReportMetric(float64(hp50.Microseconds())/1000, "hook_p50_ms")
	b.ReportMetric(float64(hp99.Microseconds())/1000, "hook_p99_ms")
	b.ReportMetric(float64(fp50.Microseconds())/1000, "true_p50_ms")
	b.ReportMetric(float64(fp99.Microseconds())/1000, "true_p99_ms")
	b.ReportMetric(float64(hp50)/float64(fp50), "x_floor_p50")
}

func spawn(b *testing.B, bin string, env []string, stdin string, wantAnswer bool) time.Duration {
	cmd := exec.Command(bin)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
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
