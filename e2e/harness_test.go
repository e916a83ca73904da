package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/claudecode"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/internal/proc"
	"github.com/toolgate/toolgate/modelscript"
	"github.com/toolgate/toolgate/paths"
	"github.com/toolgate/toolgate/supervisor"
)

// world is one isolated toolgate installation: its own XDG directories
// (so its own daemon and ledger), a HOME for claude, and a project.
type world struct {
	t       testing.TB
	root    string
	runtime string // XDG_RUNTIME_DIR: short, for the socket path limit
	project string
}

func newWorld(t *testing.T) *world { return newWorldB(t) }

// newWorldB is newWorld for benchmarks as well.
func newWorldB(t testing.TB) *world {
	t.Helper()
	root := t.TempDir()
	runtime, err := os.MkdirTemp("", "tg")
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, root: root, runtime: runtime, project: filepath.Join(root, "project")}
	for _, d := range []string{w.project, filepath.Join(root, "home"), filepath.Join(root, "state"), filepath.Join(root, "config")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		w.stopDaemon()
		os.RemoveAll(runtime)
	})
	return w
}

// env is the environment of toolgate and, through it, of claude.
func (w *world) env(model *modelscript.Server) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(w.root, "home"),
		"XDG_RUNTIME_DIR=" + w.runtime,
		"XDG_STATE_HOME=" + filepath.Join(w.root, "state"),
		"XDG_CONFIG_HOME=" + filepath.Join(w.root, "config"),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"TOOLGATE_CLAUDE=" + claudeBin,
		"TOOLGATE_HOOK=" + hookBin,
	}
	if model != nil {
		env = append(env, "ANTHROPIC_BASE_URL="+model.URL, "ANTHROPIC_API_KEY=sk-test")
	}
	return env
}

func (w *world) paths() paths.Paths {
	return paths.Paths{RuntimeDir: filepath.Join(w.runtime, "toolgate"), StateDir: filepath.Join(w.root, "state", "toolgate")}
}

func (w *world) client() *client.Client { return client.NewClient(w.paths().Socket()) }

func (w *world) approver() *client.Client { return client.NewClient(w.paths().ApproveSocket()) }

// stopDaemon ends the world's daemon, if one runs.
func (w *world) stopDaemon() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := w.client().Status(ctx)
	if err != nil {
		return
	}
	if p, err := os.FindProcess(st.PID); err == nil {
		p.Signal(os.Interrupt)
		waitGone(st.PID, 10*time.Second)
	}
}

func (w *world) writeFile(name, content string) string {
	w.t.Helper()
	path := filepath.Join(w.project, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		w.t.Fatal(err)
	}
	return path
}

// result is one finished toolgate run.
type result struct {
	code   int
	stdout string
	stderr string
	report supervisor.Report
	raw    []byte // the report file as written
	// policyFile is the policy the run was given.
	policyFile string
	claude     claudeResult
	model      *modelscript.Server
}

// claudeResult is claude's own --output-format json result.
type claudeResult struct {
	IsError           bool   `json:"is_error"`
	Result            string `json:"result"`
	SessionID         string `json:"session_id"`
	PermissionDenials []struct {
		ToolUseID string `json:"tool_use_id"`
	} `json:"permission_denials"`
}

// runTimeout bounds one toolgate run in the tests.
const runTimeout = 2 * time.Minute

// runArgs configure one run.
type runArgs struct {
	script     []modelscript.Step
	agents     map[string][]modelscript.Step // subagents' scripts, by the marker in their prompt
	policy     string                        // the policy document
	policyFile string                        // where it is written (a temporary file when "")
	mcp        string                        // the --mcp-config value for the user's servers, if any
	transport  string                        // --hook-transport; the default (auto) when ""
	toolgate   []string                      // extra toolgate run flags
	claudeArgs []string                      // extra claude arguments, before the prompt
	claudeEnv  []string
	// stderrLines, when set, also receives toolgate run's stderr.
	stderrLines io.Writer
	// environ, when set, is the run's whole environment instead of the
	// world's (claudeEnv is still added).
	environ func(*modelscript.Server) []string
}

// run runs toolgate run -- claude -p on a scripted model and returns what
// came out.
func (w *world) run(a runArgs) result {
	w.t.Helper()
	cmd, _, finish := w.start(a)
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			w.t.Fatalf("toolgate run: %v", err)
		}
	}
	return finish(cmd)
}

// start prepares a run; the caller runs cmd and then calls finish.
func (w *world) start(a runArgs) (*exec.Cmd, *result, func(*exec.Cmd) result) {
	w.t.Helper()
	model, err := modelscript.Start(a.script)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { model.Close() })
	for marker, script := range a.agents {
		model.Agent(marker, script)
	}
	dir := w.t.TempDir()
	policyFile := filepath.Join(dir, "policy.json")
	if a.policyFile != "" {
		policyFile = a.policyFile
	}
	if err := os.WriteFile(policyFile, []byte(a.policy), 0o600); err != nil {
		w.t.Fatal(err)
	}
	reportFile := filepath.Join(dir, "report.json")
	res := &result{model: model, policyFile: policyFile}
	args := append([]string{"run", "--policy", policyFile, "--report", reportFile}, a.toolgate...)
	if a.transport != "" {
		args = append(args, "--hook-transport", a.transport)
	}
	args = append(args, "--", claudeBin, "-p", "--output-format", "json")
	args = append(args, a.claudeArgs...)
	if a.mcp != "" {
		args = append(args, "--mcp-config", a.mcp)
	}
	args = append(args, "--", "do the task")
	// No run of the suite may hang: a stuck one is killed (and fails).
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	w.t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, toolgateBin, args...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = w.project
	env := w.env
	if a.environ != nil {
		env = a.environ
	}
	cmd.Env = append(env(model), a.claudeEnv...)
	var stdout, stderr bytes.Buffer
	tee := a.stderrLines
	if tee == nil {
		tee = io.Discard
	}
	cmd.Stdout, cmd.Stderr = &stdout, io.MultiWriter(&stderr, tee)
	return cmd, res, func(cmd *exec.Cmd) result {
		res.code = cmd.ProcessState.ExitCode()
		res.stdout, res.stderr = stdout.String(), stderr.String()
		if data, err := os.ReadFile(reportFile); err == nil {
			res.raw = data
			if err := json.Unmarshal(data, &res.report); err != nil {
				w.t.Fatalf("report: %v", err)
			}
		}
		json.Unmarshal([]byte(res.stdout), &res.claude)
		w.t.Logf("toolgate run exited %d\nstderr:\n%s", res.code, res.stderr)
		return *res
	}
}

// transports are toolgate run's hook transports: the tests of the gate
// itself run through each.
var transports = []string{supervisor.HookHTTP, supervisor.HookCommand}

// forTransports runs test once for each hook transport, as a subtest.
//
// A release older than claudecode.TranscriptRanSince cannot tell run which
// calls ran without PostToolUse hooks: there the http case checks that run
// refuses --hook-transport http before claude starts (the default picks the
// command), instead of gating through it.
func forTransports(t *testing.T, test func(t *testing.T, transport string)) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			if tr == supervisor.HookHTTP && !httpHooks(t) {
				return
			}
			test(t, tr)
		})
	}
}

// httpHooks tells whether the release under test takes run's http hooks;
// when it does not, it has checked that run refuses them.
func httpHooks(t *testing.T) bool {
	t.Helper()
	if v, _ := claudecode.InstalledVersion(claudeBin); !claudecode.AtLeast(v, claudecode.TranscriptRanSince) {
		refusesHTTPHooks(t, v)
		return false
	}
	return true
}

// refusesHTTPHooks checks that run refuses the http transport with this
// release (exit 64, saying which release it needs), before claude starts.
func refusesHTTPHooks(t *testing.T, version string) {
	t.Helper()
	w := newWorld(t)
	r := w.run(runArgs{transport: supervisor.HookHTTP, policy: `{"version": 1, "default": "deny", "rules": []}`,
		script: []modelscript.Step{step(bash("toolu_never", "touch never.txt"))}})
	if r.code != 64 || !strings.Contains(r.stderr, "needs Claude Code "+claudecode.TranscriptRanSince) || len(r.model.ToolResults()) != 0 {
		t.Fatalf("Claude Code %s with --hook-transport http: exit %d, want 64 before claude starts:\n%s", version, r.code, r.stderr)
	}
}

// call returns the report's entry for a tool_use_id.
func (r result) call(t *testing.T, id string) api.Call {
	t.Helper()
	for _, c := range r.report.Calls {
		if c.ToolUseID == id {
			return c
		}
	}
	t.Fatalf("no call %s in the report: %+v", id, r.report.Calls)
	return api.Call{}
}

// saw returns what the model saw as the result of a call.
func (r result) saw(t *testing.T, id string) modelscript.Result {
	t.Helper()
	res, ok := r.model.ToolResults()[id]
	if !ok {
		t.Fatalf("the model never saw a result for %s", id)
	}
	return res
}

// audit lists the calls the daemon recorded for a session, through the CLI.
func (w *world) audit(session string) []api.Call {
	w.t.Helper()
	cmd := exec.Command(toolgateBin, "audit", "--session", session, "--json")
	cmd.Env = w.env(nil)
	out, err := cmd.Output()
	if err != nil {
		w.t.Fatalf("toolgate audit: %v", err)
	}
	var doc struct {
		Calls []api.Call `json:"calls"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		w.t.Fatalf("toolgate audit --json: %v: %s", err, out)
	}
	return doc.Calls
}

// lines is an io.Writer that hands each complete line to a channel.
type lines struct {
	ch  chan string
	buf []byte
}

func newLines() *lines { return &lines{ch: make(chan string, 100)} }

func (l *lines) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		select {
		case l.ch <- string(l.buf[:i]):
		default: // nobody is reading: drop it, the full text is in the result
		}
		l.buf = l.buf[i+1:]
	}
}

// approvalID waits for toolgate run to announce an approval and returns
// its id: the line is the sign that the record exists and a call waits.
func (l *lines) approvalID(t *testing.T) string {
	t.Helper()
	_, rest, _ := strings.Cut(l.waiting(t), "waiting for approval ")
	id, _, _ := strings.Cut(rest, " ")
	return id
}

// waiting waits for toolgate run's line that announces an approval.
func (l *lines) waiting(t *testing.T) string {
	t.Helper()
	timeout := time.After(runTimeout)
	for {
		select {
		case line := <-l.ch:
			if strings.Contains(line, "waiting for approval ") {
				return line
			}
		case <-timeout:
			t.Fatal("toolgate run never announced an approval")
		}
	}
}

// toolgate runs a toolgate command in the world and returns its exit code
// and output.
func (w *world) toolgate(args ...string) (int, string) {
	w.t.Helper()
	return w.toolgateIn(w.env(nil), args...)
}

// toolgateIn runs a toolgate command with the environment env, with no
// terminal, and returns its exit code and output.
func (w *world) toolgateIn(env []string, args ...string) (int, string) {
	w.t.Helper()
	cmd := exec.Command(toolgateBin, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		w.t.Fatalf("toolgate %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// waitGone waits until pid has exited (a zombie has).
func waitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !proc.Alive(pid) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func contains(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s lacks %q:\n%s", what, sub, s)
		}
	}
}

func bash(id, command string) modelscript.ToolUse {
	return modelscript.ToolUse{ID: id, Name: "Bash", Input: map[string]string{"command": command, "description": "step"}}
}

func step(uses ...modelscript.ToolUse) modelscript.Step { return modelscript.Step{ToolUses: uses} }
