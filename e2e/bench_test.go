package e2e

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/contain"
	"github.com/toolgate/toolgate/modelscript"
	"github.com/toolgate/toolgate/prompttool"
	"github.com/toolgate/toolgate/supervisor"
	"golang.org/x/sys/unix"
)

// BenchmarkRunVsBareClaude times the same scripted 50-call session with
// the real CLI, interleaved: bare claude -p (Bash allowed by
// --allowedTools); the floor, bare claude -p with one no-op http
// PreToolUse hook (a server in this process that answers nothing); the
// floor with toolgate's permission-prompt MCP server configured (a real
// prompt tool in this process, which no call of the session reaches), to
// show what the CLI itself spends on the server run registers for the
// hook binary (--hook-transport command); the floor with a hook that
// makes 1 KB durable (a write and an fdatasync, as the ledger's journal
// does) before it answers: what any gate that records each call before
// the call runs pays at least;
// bare claude -p in toolgate's boundary (bare_boundary) and in Claude
// Code's sandbox (bare_sandbox), whose turns against bare's are what one
// Bash command pays in each; and
// claude under toolgate run with an allow-all policy, where every call is
// hooked, recorded durably and decided: by default (http hooks, Landlock,
// the Bash boundary), with Landlock alone (what the boundary adds is the
// difference), with the command hook, uncontained, and strict. With
// TOOLGATE_BENCH_BASELINE naming another build's toolgate (its
// toolgate-hook beside it), that build's run is timed too, in the same
// rounds. The daemon runs before each timed run, as it does between the
// runs of a machine; its start is timed apart (cold).
//
// Each iteration is one round. The variants the goal compares (bare, the
// floors, toolgate run with and without the boundary, the baseline) run in
// every round; the others
// (command, uncontained, strict, cold) in every third, from the first, so
// that more rounds of the goal's cost little more time. A time is the
// median of its rounds, a ratio the median of the rounds' ratios; -v logs
// every round. TOOLGATE_BENCH_VARIANTS (names, comma-separated) times only
// those named.
//
// The scripted model stamps every turn it is asked for, so that a
// session's time splits into its start (until the first turn), its turns
// (the median gap between two) and its end (after the last call's turn):
// NAME_turn_ms, NAME_first_ms and NAME_last_ms are what toolgate run (and
// the baseline) add to each against the floor, and floor_mcp_first_ms
// what the MCP server adds to the CLI's start.
func BenchmarkRunVsBareClaude(b *testing.B) {
	calls := benchCalls()
	// Every turn stamps the time claude asked for it: the gaps between
	// turns are what a call costs, the first turn and the time after the
	// last what the session's start and end do.
	var (
		turnsMu sync.Mutex
		turns   []time.Time // the running session's
	)
	var script []modelscript.Step
	for i := range calls {
		s := step(bash(fmt.Sprintf("toolu_bench_%02d", i), "true"))
		s.Before = func() {
			turnsMu.Lock()
			turns = append(turns, time.Now())
			turnsMu.Unlock()
		}
		script = append(script, s)
	}
	noop := noopHookServer(b)
	durable, synced := durableHookServer(b)
	promptTool := promptToolServer(b)
	baseline := os.Getenv("TOOLGATE_BENCH_BASELINE")
	type variant struct {
		name, bin string
		args      []string
		every     int // rounds: 1, every round; 3, every third
	}
	variants := []variant{
		{name: "bare", every: 1}, {name: "floor", every: 1}, {name: "floor_mcp", every: 1}, {name: "floor_durable", every: 1},
		{name: "bare_boundary", every: 1}, {name: "bare_sandbox", every: 3},
		{name: "toolgate", bin: toolgateBin, every: 1},
		{name: "landlock", bin: toolgateBin, args: []string{"--containment", contain.Landlock}, every: 1},
		{name: "command", bin: toolgateBin, args: []string{"--hook-transport", supervisor.HookCommand}, every: 3},
		{name: "uncontained", bin: toolgateBin, args: []string{"--containment", contain.Off}, every: 3},
		{name: "strict", bin: toolgateBin, args: []string{"--containment", contain.Strict}, every: 3},
		{name: "cold", bin: toolgateBin, every: 3},
	}
	if baseline != "" {
		variants = append(variants, variant{name: "baseline", bin: baseline, every: 1})
	}
	if only := os.Getenv("TOOLGATE_BENCH_VARIANTS"); only != "" {
		names := strings.Split(only, ",")
		variants = slices.DeleteFunc(variants, func(v variant) bool { return !slices.Contains(names, v.name) })
	}
	times := map[string]map[int]time.Duration{} // by variant, then round
	phases := map[string]map[int]phase{}
	for _, v := range variants {
		times[v.name], phases[v.name] = map[int]time.Duration{}, map[int]phase{}
	}
	for round := 0; b.Loop(); round++ {
		for _, v := range variants {
			if round%v.every != 0 {
				continue
			}
			w := newWorldB(b)
			model, err := modelscript.Start(script)
			if err != nil {
				b.Fatal(err)
			}
			policy := filepath.Join(w.root, "policy.json")
			os.WriteFile(policy, []byte(allowAllPolicy), 0o600)
			var cmd *exec.Cmd
			switch v.name {
			case "bare":
				cmd = exec.Command(claudeBin, "-p", "--output-format", "json", "--allowedTools", "Bash", "--", "go")
			case "floor":
				cmd = exec.Command(claudeBin, "-p", "--output-format", "json", "--allowedTools", "Bash", "--settings", noop, "--", "go")
			case "bare_boundary":
				cmd = bareInBoundary(b, w)
			case "bare_sandbox":
				cmd = exec.Command(claudeBin, "-p", "--output-format", "json", "--allowedTools", "Bash", "--settings",
					`{"sandbox": {"enabled": true, "autoAllowBashIfSandboxed": false, "allowUnsandboxedCommands": false}}`, "--", "go")
			case "floor_mcp":
				cmd = exec.Command(claudeBin, "-p", "--output-format", "json", "--allowedTools", "Bash", "--settings", noop,
					"--mcp-config", promptTool, "--permission-prompt-tool", supervisor.PromptToolName, "--", "go")
			case "floor_durable":
				cmd = exec.Command(claudeBin, "-p", "--output-format", "json", "--allowedTools", "Bash", "--settings", durable, "--", "go")
			default:
				args := append(append([]string{"run", "--policy", policy}, v.args...), "--", claudeBin, "-p", "--output-format", "json", "--", "go")
				cmd = exec.Command(v.bin, args...)
			}
			cmd.Dir, cmd.Env = w.project, append(w.env(model), cmd.Env...)
			if v.bin != "" {
				cmd.Env = append(cmd.Env, "TOOLGATE_HOOK="+filepath.Join(filepath.Dir(v.bin), "toolgate-hook"))
				if v.name != "cold" {
					w.startDaemon(v.bin)
				}
			}
			turnsMu.Lock()
			turns = nil
			turnsMu.Unlock()
			start := time.Now()
			out, err := cmd.CombinedOutput()
			d := time.Since(start)
			model.Close()
			turnsMu.Lock()
			phases[v.name][round] = phaseOf(start, turns, start.Add(d))
			turnsMu.Unlock()
			if err != nil {
				b.Fatalf("%s: %v: %s", v.name, err, out)
			}
			if n := len(model.ToolResults()); n != calls {
				b.Fatalf("%s: %d tool results, want %d", v.name, n, calls)
			}
			if v.name == "floor_durable" {
				if n, err := synced(); n != calls || err != nil {
					b.Fatalf("%s: %d calls made durable, want %d (%v)", v.name, n, calls, err)
				}
			}
			times[v.name][round] = d
			p := phases[v.name][round]
			b.Logf("round %d: %s %.3f s (first turn %.1f ms, a turn %.2f ms, after the last %.1f ms)", round, v.name, d.Seconds(),
				ms(p.first), ms(p.turn), ms(p.last))
			if v.bin != "" && v.bin != toolgateBin {
				// Another build's daemon speaks its own protocol version:
				// its own CLI stops it.
				stop := exec.Command(v.bin, "daemon", "stop")
				stop.Env = w.env(nil)
				if out, err := stop.CombinedOutput(); err != nil {
					b.Fatalf("%s daemon stop: %v: %s", v.bin, err, out)
				}
			}
			w.stopDaemon()
		}
	}
	// Each variant's median, and its ratio to another: the median of the
	// ratios of the rounds that timed both, so that a machine slower in
	// one round than another weighs on both sides alike. A variant left
	// out by TOOLGATE_BENCH_VARIANTS has neither.
	ratio := func(name, floor, metric string) {
		var rs []float64
		for round, d := range times[name] {
			if f, ok := times[floor][round]; ok {
				rs = append(rs, d.Seconds()/f.Seconds())
			}
		}
		if len(rs) > 0 {
			slices.Sort(rs)
			b.ReportMetric(rs[len(rs)/2], metric)
		}
	}
	for _, v := range variants {
		b.ReportMetric(median(slices.Collect(maps.Values(times[v.name]))).Seconds(), v.name+"_s")
		if v.name == "bare" {
			continue
		}
		ratio(v.name, "bare", v.name+"_x_bare")
		if v.name != "floor" {
			ratio(v.name, "floor", v.name+"_x_floor")
		}
	}
	ratio("toolgate", "landlock", "toolgate_x_landlock")
	ratio("toolgate", "floor_durable", "toolgate_x_floor_durable")
	// Where run's time goes: what it adds to a turn, to the session's
	// start and to its end, against the floor, each the median of the
	// rounds' differences; and what the MCP server costs the CLI's start.
	added := func(name, floor, metric string, of func(phase) time.Duration) {
		var ds []float64
		for round, p := range phases[name] {
			if f, ok := phases[floor][round]; ok {
				ds = append(ds, ms(of(p))-ms(of(f)))
			}
		}
		if len(ds) > 0 {
			slices.Sort(ds)
			b.ReportMetric(ds[len(ds)/2], metric)
		}
	}
	for _, name := range []string{"toolgate", "landlock", "baseline"} {
		added(name, "floor", name+"_turn_ms", func(p phase) time.Duration { return p.turn })
		added(name, "floor", name+"_first_ms", func(p phase) time.Duration { return p.first })
		added(name, "floor", name+"_last_ms", func(p phase) time.Duration { return p.last })
	}
	added("floor_mcp", "floor", "floor_mcp_first_ms", func(p phase) time.Duration { return p.first })
	added("bare_boundary", "bare", "bare_boundary_turn_ms", func(p phase) time.Duration { return p.turn })
	added("bare_sandbox", "bare", "bare_sandbox_turn_ms", func(p phase) time.Duration { return p.turn })
	added("floor_durable", "floor", "floor_durable_turn_ms", func(p phase) time.Duration { return p.turn })
}

// bareInBoundary is bare claude -p in toolgate's boundary as toolgate run
// applies it: claude in the session's namespace (toolgate-bash --enter),
// each Bash command in bash at a link with toolgate-bash.so, and nothing
// else of toolgate.
func bareInBoundary(b *testing.B, w *world) *exec.Cmd {
	tmp := filepath.Join(w.root, "tmp")
	os.MkdirAll(filepath.Join(w.project, ".claude"), 0o755)
	os.MkdirAll(tmp, 0o700)
	bound := contain.Boundary{Writable: append([]string{w.project, tmp}, contain.Devices...), Projects: []string{w.project}, Snapshots: filepath.Join(w.root, "home", ".claude", "shell-snapshots")}
	enter, err := bound.Namespaced().Encode()
	if err != nil {
		b.Fatal(err)
	}
	each, _ := bound.PerCommand().Encode()
	claude, err := filepath.Abs(claudeBin)
	if err != nil {
		b.Fatal(err)
	}
	shell, err := contain.SessionShell(hookBin, b.TempDir())
	if err != nil || shell.Preload == "" {
		b.Fatalf("no %s beside %s: %v", contain.PreloadName, hookBin, err)
	}
	cmd := exec.Command(contain.ShellPath(hookBin), contain.EnterFlag, enter, claude, "-p", "--output-format", "json", "--allowedTools", "Bash", "--", "go")
	cmd.Env = shell.Env([]string{"TMPDIR=" + tmp, "CLAUDE_CODE_TMPDIR=" + tmp}, each)
	return cmd
}

// phase is where a session's time went: until claude asked for its first
// turn, a turn (the median gap between two), and after its last.
type phase struct{ first, turn, last time.Duration }

func phaseOf(start time.Time, turns []time.Time, end time.Time) phase {
	if len(turns) == 0 {
		return phase{}
	}
	var gaps []time.Duration
	for i := 1; i < len(turns); i++ {
		gaps = append(gaps, turns[i].Sub(turns[i-1]))
	}
	p := phase{first: turns[0].Sub(start), last: end.Sub(turns[len(turns)-1])}
	if len(gaps) > 0 {
		p.turn = median(gaps)
	}
	return p
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// promptToolServer serves toolgate's permission-prompt MCP tool (a real
// prompttool host) with a decider that denies, and returns an MCP
// configuration that names it, as toolgate run writes one.
func promptToolServer(b testing.TB) string {
	host, err := prompttool.Listen(denyAll{}, "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { host.Close() })
	path := filepath.Join(b.TempDir(), "mcp.json")
	doc := `{"mcpServers":{"toolgate":{"type":"http","url":"` + host.URL + `","headers":{"Authorization":"Bearer ` + host.Token + `"}}}}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// denyAll denies every call the prompt tool is asked about: none of the
// benchmark's should be (each is allowed before any prompt), and a denied
// one fails the run's count of tool results.
type denyAll struct{}

func (denyAll) Decide(context.Context, api.PromptRequest, func(string)) (api.Verdict, error) {
	return api.Deny(api.ReasonDefault, api.SourcePolicy), nil
}

// noopHookServer serves a no-op http hook (200, no body: no verdict) for
// the benchmark's floor and returns the settings that register it for
// PreToolUse.
func noopHookServer(b testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) })}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"http","url":"http://` + ln.Addr().String() + `/hook","timeout":30}]}]}}`
}

// durableHookServer is noopHookServer's hook, which first writes 1 KB to
// a file and fdatasyncs it, over blocks written before (as the ledger's
// journal is): the least a gate that records a call before it answers
// does. synced is how many records were made durable since it was last
// called, or the first write or sync that failed: a failed hook is no
// verdict to the CLI, and the round would time nothing durable. Neither
// the file nor the record is zeros, which a filesystem may store for less.
func durableHookServer(b testing.TB) (settings string, synced func() (int, error)) {
	f, err := os.Create(filepath.Join(b.TempDir(), "journal"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	const size = 1 << 20
	if _, err := f.Write(bytes.Repeat([]byte("toolgate"), size/8)); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	var (
		mu     sync.Mutex
		off    int64
		n      int
		failed error
	)
	record := bytes.Repeat([]byte(`{"call":1}`), 103)[:1024]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		defer mu.Unlock()
		_, err := f.WriteAt(record, off)
		if err == nil {
			err = unix.Fdatasync(int(f.Fd()))
		}
		if err != nil {
			failed = cmp.Or(failed, err)
			return
		}
		n++
		off = (off + int64(len(record))) % size
	})}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	synced = func() (int, error) {
		mu.Lock()
		defer mu.Unlock()
		done := n
		n = 0
		return done, failed
	}
	return `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"http","url":"http://` + ln.Addr().String() + `/hook","timeout":30}]}]}}`, synced
}

// startDaemon starts the world's daemon with bin (toolgate serve), and
// returns once it answers.
func (w *world) startDaemon(bin string) {
	w.t.Helper()
	cmd := exec.Command(bin, "serve", "--background")
	cmd.Env = w.env(nil)
	if out, err := cmd.CombinedOutput(); err != nil {
		w.t.Fatalf("toolgate serve --background: %v: %s", err, out)
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
