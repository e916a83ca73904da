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
	var bare, gated []time.Duration
	for b.Loop() {
		for _, viaToolgate := range []bool{false, true} {
			w := newWorldB(b)
			model, err := modelscript.Start(script)
			if err != nil {
				b.Fatal(err)
			}
			policy := filepath.Join(w.root, "policy.json")
			os.WriteFile(policy, []byte(allowAllPolicy), 0o600)
			var cmd *exec.Cmd
			if viaToolgate {
				cmd = exec.Command(toolgateBin, "run", "--policy", policy, "--", claudeBin, "-p", "--output-format", "json", "--", "go")
			} else {
				cmd = exec.Command(claudeBin, "-p", "--output-format", "json", "--allowedTools", "Bash", "--", "go")
			}
			cmd.Dir, cmd.Env = w.project, w.env(model)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			d := time.Since(start)
			model.Close()
			if err != nil {
				b.Fatalf("%v: %s", err, out)
			}
			if n := len(model.ToolResults()); n != calls {
				b.Fatalf("%d tool results, want %d", n, calls)
			}
			if viaToolgate {
				gated = append(gated, d)
			} else {
				bare = append(bare, d)
			}
			w.stopDaemon()
		}
	}
	mb, mg := median(bare), median(gated)
	b.ReportMetric(mb.Seconds(), "bare_s")
	b.ReportMetric(mg.Seconds(), "toolgate_s")
	b.ReportMetric(mg.Seconds()/mb.Seconds(), "x_bare")
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
