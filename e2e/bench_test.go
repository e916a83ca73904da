package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/toolgate/toolgate/contain"
	"github.com/toolgate/toolgate/modelscript"
)

// BenchmarkRunVsBareClaude times the same scripted 50-call session with
// the real CLI twice, interleaved: bare claude -p (Bash allowed by
// --allowedTools) and claude under toolgate run with an allow-all policy,
// where every call is hooked, recorded durably and decided.
func BenchmarkRunVsBareClaude(b *testing.B) {
	calls := benchCalls()
	var script []modelscript.Step
	for i := range calls {
		script = append(script, step(bash(fmt.Sprintf("toolu_bench_%02d", i), "true")))
	}
	// bare claude -p, then toolgate run with each containment: off, the
	// default (Landlock) and strict (Landlock and Claude Code's sandbox).
	variants := []string{"bare", contain.Off, contain.Auto, contain.Strict}
	times := map[string][]time.Duration{}
	for b.Loop() {
		for _, v := range variants {
			w := newWorldB(b)
			model, err := modelscript.Start(script)
			if err != nil {
				b.Fatal(err)
			}
			policy := filepath.Join(w.root, "policy.json")
			os.WriteFile(policy, []byte(allowAllPolicy), 0o600)
			cmd := exec.Command(toolgateBin, "run", "--containment", v, "--policy", policy, "--", claudeBin, "-p", "--output-format", "json", "--", "go")
			if v == "bare" {
				cmd = exec.Command(claudeBin, "-p", "--output-format", "json", "--allowedTools", "Bash", "--", "go")
			}
			cmd.Dir, cmd.Env = w.project, w.env(model)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			d := time.Since(start)
			model.Close()
			if err != nil {
				b.Fatalf("%s: %v: %s", v, err, out)
			}
			if n := len(model.ToolResults()); n != calls {
				b.Fatalf("%s: %d tool results, want %d", v, n, calls)
			}
			times[v] = append(times[v], d)
			w.stopDaemon()
		}
	}
	bare := median(times["bare"]).Seconds()
	b.ReportMetric(bare, "bare_s")
	for v, name := range map[string]string{contain.Auto: "toolgate", contain.Off: "uncontained", contain.Strict: "strict"} {
		m := median(times[v]).Seconds()
		b.ReportMetric(m, name+"_s")
		b.ReportMetric(m/bare, name+"_x_bare")
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchCalls is the session's length: 50, or TOOLGATE_BENCH_CALLS.
func benchCalls() int {
	if n, err := strconv.Atoi(os.Getenv("TOOLGATE_BENCH_CALLS")); err == nil {
		return n
	}
	return 50
}
