package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/contain"
	"github.com/toolgate/toolgate/modelscript"
)

// Sessions gated by toolgate install's hook: claude -p runs in a project
// whose .claude/settings.json has the hook, without toolgate run and
// without a prompt tool, so an ask can only be approved through Claude
// Code's PermissionRequest hook. --permission-prompts none makes -p behave
// as an interactive session without its dialog: a hook's ask reaches the
// PermissionRequest hook (without it, -p refuses every ask at once).

const installedPolicy = `{"version": 3, "default": "allow", "rules": [
  {"id": "ask-touch", "effect": "ask", "tool": "Bash", "input": {"command": {"command": [["touch"]]}}, "reason_code": "needs_review"},
  {"id": "deny-env", "effect": "deny", "tool": "Read", "input": {"file_path": {"const": ".env"}}, "reason_code": "secret_file"}
]}`

// permissionPrompts reports whether the CLI under test has
// --permission-prompts. 2.1.332 has it; 2.1.150 has not, and there claude
// -p refuses a hook's ask at once, so no approval can be asked for: the
// tests then check that, instead of the approval.
var permissionPrompts = sync.OnceValue(func() bool {
	out, _ := exec.Command(claudeBin, "--help").Output()
	return strings.Contains(string(out), "--permission-prompts")
})

// interactiveStyle are the claude -p flags under which a hook's ask reaches
// the PermissionRequest hook, where the CLI has them.
func interactiveStyle() []string {
	if permissionPrompts() {
		return []string{"--permission-prompts", "none"}
	}
	return nil
}

// refusedAtOnce checks what a CLI without --permission-prompts does with a
// hook's ask in -p: it refuses it with the hook's reason; nothing ran and
// no approval was asked for.
func (w *world) refusedAtOnce(t *testing.T, session string, model *modelscript.Server, id string) {
	t.Helper()
	seen := model.ToolResults()[id]
	if !seen.IsError || !strings.Contains(seen.Text, "toolgate asks for approval") {
		t.Errorf("the model saw %+v, want the CLI's refusal with toolgate's reason", seen)
	}
	for _, c := range w.audit(session) {
		if c.ToolUseID == id && (c.Effect != "ask" || c.Executed || c.ApprovalID != "") {
			t.Errorf("audit of %s: %+v, want an ask that nobody was asked about and that did not run", id, c)
		}
	}
}

// installProject installs the hook into the world's project, with the
// policy kept in the project.
func (w *world) installProject(extra ...string) {
	w.t.Helper()
	w.writeFile("toolgate-policy.json", installedPolicy)
	args := append([]string{"install", "--scope", "project", "--policy", "toolgate-policy.json"}, extra...)
	cmd := exec.Command(toolgateBin, args...)
	cmd.Dir, cmd.Env = w.project, append(w.env(nil), onPath())
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) != 0 && !slices.Contains(extra, "off") {
		w.t.Fatalf("toolgate install: %v %q (want success, quiet)", err, out)
	}
}

// onPath puts toolgate and toolgate-hook on PATH, as installed: a project's
// shared settings name the hook from there.
func onPath() string { return "PATH=" + filepath.Dir(toolgateBin) + ":" + os.Getenv("PATH") }

// claudeP runs claude -p in the project, as a script would, and returns
// claude's result and exit code.
func (w *world) claudeP(script []modelscript.Step, env []string, args ...string) (claudeResult, int, *modelscript.Server) {
	w.t.Helper()
	model, err := modelscript.Start(script)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { model.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	args = append([]string{"-p", "--output-format", "json"}, args...)
	cmd := exec.CommandContext(ctx, claudeBin, append(args, "--", "do the task")...)
	cmd.Dir, cmd.Env, cmd.WaitDelay = w.project, append(append(w.env(model), onPath()), env...), 5*time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	var res claudeResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		w.t.Fatalf("claude -p: %v; stdout %q stderr %q", err, stdout.String(), stderr.String())
	}
	return res, cmd.ProcessState.ExitCode(), model
}

// pendingApproval polls toolgate pending until an approval waits, and
// returns it: the record's existence is the sign that the hook waits.
func (w *world) pendingApproval() api.ApprovalDetail {
	w.t.Helper()
	deadline := time.Now().Add(runTimeout)
	for time.Now().Before(deadline) {
		code, out := w.toolgateOut("pending", "--json")
		var list struct {
			Approvals []api.ApprovalDetail `json:"approvals"`
		}
		if code == 0 && json.Unmarshal([]byte(out), &list) == nil && len(list.Approvals) > 0 {
			return list.Approvals[0]
		}
		time.Sleep(100 * time.Millisecond) // polling an observable state: the approval record
	}
	w.t.Fatal("no approval appeared")
	return api.ApprovalDetail{}
}

// toolgateOut is toolgate with its stdout only.
func (w *world) toolgateOut(args ...string) (int, string) {
	w.t.Helper()
	cmd := exec.Command(toolgateBin, args...)
	cmd.Env = w.env(nil)
	out, _ := cmd.Output()
	return cmd.ProcessState.ExitCode(), string(out)
}

// An ask resolved by toolgate approve through the PermissionRequest path;
// an allowed call and a denied one beside it; the audit is complete and
// the session ends with claude. Then uninstall leaves the project as it was.
func TestInstalledHookGatesClaudeP(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.writeFile(".env", "SECRET=1")
	w.installProject()
	settings := filepath.Join(w.project, ".claude", "settings.json")
	done := make(chan struct{})
	var res claudeResult
	var code int
	var model *modelscript.Server
	go func() {
		defer close(done)
		res, code, model = w.claudeP([]modelscript.Step{
			step(bash("toolu_inst_echo", "echo hello")),
			step(modelscript.ToolUse{ID: "toolu_inst_env", Name: "Read", Input: map[string]string{"file_path": filepath.Join(w.project, ".env")}}),
			step(bash("toolu_inst_ask", "touch approved.txt")),
		}, nil, interactiveStyle()...)
	}()
	if !permissionPrompts() {
		<-done
		w.refusedAtOnce(t, res.SessionID, model, "toolu_inst_ask")
		if calls := w.audit(res.SessionID); len(calls) != 3 {
			t.Errorf("audit: %+v", calls)
		}
		return
	}
	a := w.pendingApproval()
	if a.Approval.ToolUseID != "toolu_inst_ask" || a.Approval.MatchedRule == nil || *a.Approval.MatchedRule != "ask-touch" ||
		a.Approval.PolicyVersion != 3 || a.ReasonCode != "needs_review" {
		t.Errorf("the approval record: %+v", a)
	}
	if code, out := w.toolgate("approve", a.Approval.ID, "--reason", "looks fine"); code != 0 || out != "" {
		t.Fatalf("approve: exit %d %q", code, out)
	}
	<-done
	if code != 0 || res.IsError {
		t.Fatalf("claude -p exited %d: %+v", code, res)
	}
	if _, err := os.Stat(filepath.Join(w.project, "approved.txt")); err != nil {
		t.Fatal("the approved call did not run")
	}
	session := res.SessionID
	if a.Approval.SessionID != session {
		t.Errorf("the approval's session is %q, claude's %q", a.Approval.SessionID, session)
	}
	calls := map[string]api.Call{}
	for _, c := range w.audit(session) {
		calls[c.ToolUseID] = c
	}
	want := map[string]struct {
		effect, reason, source string
		executed               bool
	}{
		"toolu_inst_echo": {"allow", "default", "policy", true},
		"toolu_inst_env":  {"deny", "secret_file", "policy", false},
		"toolu_inst_ask":  {"allow", "needs_review", "person", true},
	}
	for id, wc := range want {
		c, ok := calls[id]
		if !ok || string(c.Effect) != wc.effect || c.ReasonCode != wc.reason || c.Source != wc.source || c.Executed != wc.executed || c.Executions > 1 {
			t.Errorf("audit of %s: %+v, want %+v", id, c, wc)
		}
	}
	if c := calls["toolu_inst_ask"]; !strings.HasPrefix(c.Actor, "user:") || c.ApprovalID != a.Approval.ID || c.Seen == "" {
		t.Errorf("the approved call's audit: %+v", c)
	}
	if len(calls) != len(want) {
		t.Errorf("audit: %d calls, want %d: %+v", len(calls), len(want), calls)
	}
	if s, err := w.client().Session(t.Context(), session); err != nil || s.EndedAt == nil || s.ClaudeSessionID != session {
		t.Errorf("the session as recorded: %+v %v (want ended at SessionEnd)", s, err)
	}
	if code, out := w.toolgate("audit", "verify"); code != 69 && code != 0 {
		t.Errorf("audit verify: %d %s", code, out)
	}
	cmd := exec.Command(toolgateBin, "uninstall", "--scope", "project")
	cmd.Dir, cmd.Env = w.project, w.env(nil)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("uninstall: %v %s", err, out)
	}
	if _, err := os.Stat(settings); !os.IsNotExist(err) {
		t.Errorf("the settings file install created is still there after uninstall: %v", err)
	}
}

// Nobody decides before the installed hook's approval timeout: the hook
// answers nothing, Claude Code's own flow decides (claude -p refuses the
// call), and the record says so: expired, handed_to_claude, nothing
// written back, not run.
func TestInstalledHookHandsOffToClaude(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.installProject("--approval-timeout", "2s")
	res, code, model := w.claudeP([]modelscript.Step{step(bash("toolu_inst_late", "touch late.txt"))}, nil, interactiveStyle()...)
	if code != 0 {
		t.Fatalf("claude -p exited %d: %+v", code, res)
	}
	if !permissionPrompts() {
		w.refusedAtOnce(t, res.SessionID, model, "toolu_inst_late")
		return
	}
	if _, err := os.Stat(filepath.Join(w.project, "late.txt")); err == nil {
		t.Fatal("the call ran though nobody approved it")
	}
	seen := model.ToolResults()["toolu_inst_late"]
	if !seen.IsError || !strings.Contains(seen.Text, "no approval surface") || strings.Contains(seen.Text, api.RetryNotice) {
		t.Errorf("the model saw %+v: want Claude Code's own refusal, no denial by toolgate", seen)
	}
	calls := w.audit(res.SessionID)
	if len(calls) != 1 {
		t.Fatalf("audit: %+v", calls)
	}
	c := calls[0]
	if c.Effect != "ask" || c.ReasonCode != "handed_to_claude" || c.Source != "claude" || c.Executed || c.ApprovalID == "" {
		t.Errorf("audit: %+v", c)
	}
	_, show := w.toolgateOut("show", c.ApprovalID, "--json")
	var d api.ApprovalDetail
	if err := json.Unmarshal([]byte(show), &d); err != nil {
		t.Fatalf("show --json: %v %s", err, show)
	}
	if d.Approval.Status != "expired" || d.Decision == nil || d.Decision.ReasonCode != "handed_to_claude" ||
		d.WriteBack == nil || d.WriteBack.WroteBack {
		t.Errorf("the approval: %+v decision %+v write-back %+v", d.Approval, d.Decision, d.WriteBack)
	}
	if code, out := w.toolgate("approve", c.ApprovalID); code != 75 {
		t.Errorf("a late approve: exit %d %s", code, out)
	}
}

// An installed session has no toolgate run to keep what the model detaches
// in its process tree (run is a child subreaper), so a detached process
// leaves claude's parent chain; it still cannot approve the session's next
// ask, because Claude Code's environment (CLAUDECODE=1) marks it. (Without
// the sandbox: in it, the detached process could not reach the daemon at
// all, TestInstalledSandboxHoldsTheModel.)
func TestInstalledDetachedSelfApprovalIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.installProject("--approval-timeout", "8s", "--containment", "off")
	log := filepath.Join(w.root, "detached.log")
	// The script is a file of the project, as an allowed program's code
	// is: the guard denies a command line that names toolgate approve.
	detached := w.detached(`for i in $(seq 1 100); do id=$(toolgate pending | awk '/^apr_/ {print $1}' | head -n 1); `+
		`if [ -n "$id" ]; then toolgate approve "$id"; echo "exit $?"; exit 0; fi; sleep 0.2; done`+"\n", log)
	path := []string{"PATH=" + filepath.Dir(toolgateBin) + ":" + os.Getenv("PATH")}
	res, code, model := w.claudeP([]modelscript.Step{step(bash("toolu_inst_detach", detached)), step(bash("toolu_inst_next", "touch forged.txt"))},
		path, interactiveStyle()...)
	if code != 0 {
		t.Fatalf("claude -p exited %d: %+v", code, res)
	}
	if _, err := os.Stat(filepath.Join(w.project, "forged.txt")); err == nil {
		t.Fatal("the model approved its own call")
	}
	if !permissionPrompts() {
		w.refusedAtOnce(t, res.SessionID, model, "toolu_inst_next") // nothing to approve, nothing ran
		return
	}
	out, _ := os.ReadFile(log)
	contains(t, "the detached process's output", string(out), "started by Claude Code", "exit 77")
	for _, c := range w.audit(res.SessionID) {
		if c.ToolUseID == "toolu_inst_next" && (c.ReasonCode != "handed_to_claude" || c.Executed) {
			t.Errorf("audit: %+v", c)
		}
	}
}

// toolgate install --containment sandbox puts Claude Code's sandbox around
// the session's Bash commands: the model's commands reach neither the
// daemon nor toolgate's files, whatever program runs them. Uninstall gives
// the file back byte for byte.
func TestInstalledSandboxHoldsTheModel(t *testing.T) {
	t.Parallel()
	needTools(t, "bwrap", "socat")
	w := newWorld(t)
	os.MkdirAll(filepath.Join(w.project, ".claude"), 0o700)
	const mine = "{\n  \"model\": \"opus\",\n  \"permissions\": {\"allow\": [\"Bash(ls)\"]}\n}\n"
	settings := w.writeFile(".claude/settings.json", mine)
	w.installProject("--containment", "sandbox")
	doc, _ := os.ReadFile(settings)
	if sb := gjson.GetBytes(doc, "sandbox"); !sb.Get("enabled").Bool() || !strings.Contains(sb.Raw, w.paths().StateDir) {
		t.Fatalf("install wrote no sandbox for toolgate's files:\n%s", doc)
	}
	ledger := w.paths().LedgerDir()
	w.writeFile("attack.sh", `toolgate pending; echo "pending: exit $?"
echo '{}' > `+ledger+`/forged && echo wrote || echo "no write"
`)
	path := []string{"PATH=" + filepath.Dir(toolgateBin) + ":" + os.Getenv("PATH")}
	res, code, model := w.claudeP([]modelscript.Step{step(bash("toolu_inst_sbx", "sh attack.sh"))}, path)
	if code != 0 {
		t.Fatalf("claude -p exited %d: %+v", code, res)
	}
	out := model.ToolResults()["toolu_inst_sbx"].Text
	t.Logf("the model's command:\n%s", out)
	contains(t, "the model's command", out, "pending: exit 69", "no write")
	if _, err := os.Stat(filepath.Join(ledger, "forged")); err == nil {
		t.Error("the model's command wrote into the ledger's directory")
	}
	cmd := exec.Command(toolgateBin, "uninstall", "--scope", "project")
	cmd.Dir, cmd.Env = w.project, w.env(nil)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("uninstall: %v %s", err, out)
	}
	if back, _ := os.ReadFile(settings); string(back) != mine {
		t.Errorf("uninstall did not restore the file:\n%s", back)
	}
}

// toolgate install (auto) gives installed sessions toolgate's Bash
// boundary through the settings file's env block: an interactive or
// scripted claude the person starts runs every Bash command in it. The
// model's commands write in the project but not git's config, the
// shell's rc file or the ledger, and reach no Unix socket; uninstall gives
// the file back byte for byte.
func TestInstalledBoundaryHoldsTheModel(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.gitProject(t)
	os.MkdirAll(filepath.Join(w.project, ".claude"), 0o700)
	const mine = "{\n  \"model\": \"opus\",\n  \"permissions\": {\"allow\": [\"Bash(ls)\"]}\n}\n"
	settings := w.writeFile(".claude/settings.json", mine)
	w.installProject()
	doc, _ := os.ReadFile(settings)
	if shell := gjson.GetBytes(doc, "env.CLAUDE_CODE_SHELL").String(); shell != contain.ShellName || gjson.GetBytes(doc, "sandbox").Exists() {
		t.Fatalf("install wrote no boundary:\n%s", doc)
	}
	home := filepath.Join(w.root, "home")
	bashrc := filepath.Join(home, ".bashrc")
	os.WriteFile(bashrc, []byte("# the person's\n"), 0o600)
	gitConfig, _ := os.ReadFile(filepath.Join(w.project, ".git", "config"))
	ledger := w.paths().LedgerDir()
	w.writeFile("attack.sh", `toolgate pending; echo "pending: exit $?"
echo '{}' > `+ledger+`/forged && echo "wrote the ledger"
git log -1 --format=tformat:pwned --output="$HOME/.bashrc" && echo "wrote the rc file"
git config core.fsmonitor "echo pwned" && echo "wrote git's config"
mkdir -p sub && echo work > sub/work.txt && echo "wrote the project"
`)
	// The temp dir the commands may write is the session's TMPDIR (/tmp
	// without one), which would hold this test's HOME and state.
	tmp := filepath.Join(w.root, "tmp")
	os.MkdirAll(tmp, 0o700)
	env := []string{"PATH=" + filepath.Dir(toolgateBin) + ":" + os.Getenv("PATH"), "TMPDIR=" + tmp}
	res, code, model := w.claudeP([]modelscript.Step{step(bash("toolu_inst_bnd", "sh attack.sh"))}, env)
	if code != 0 {
		t.Fatalf("claude -p exited %d: %+v", code, res)
	}
	out := model.ToolResults()["toolu_inst_bnd"].Text
	t.Logf("the model's command:\n%s", out)
	contains(t, "the model's command", out, "pending: exit 69", "wrote the project")
	for _, bad := range []string{"wrote the ledger", "wrote the rc file", "wrote git's config"} {
		if strings.Contains(out, bad) {
			t.Errorf("the boundary let the command through: %s", bad)
		}
	}
	unchanged(t, bashrc, "# the person's\n", "the shell's rc file")
	unchanged(t, filepath.Join(w.project, ".git", "config"), string(gitConfig), "git's config")
	cmd := exec.Command(toolgateBin, "uninstall", "--scope", "project")
	cmd.Dir, cmd.Env = w.project, w.env(nil)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("uninstall: %v %s", err, out)
	}
	if back, _ := os.ReadFile(settings); string(back) != mine {
		t.Errorf("uninstall did not restore the file:\n%s", back)
	}
}

// A FIFO where the daemon's record is (not the model's doing: Claude
// Code's sandbox keeps its Bash from the state directory, and the guard
// its other tools). Every installed hook reads the record to find the
// daemon, and opening a FIFO waits for a writer: the hook would wait until
// Claude Code kills it at its timeout, which the CLI takes for no verdict,
// and a call it allows by itself (a Read in the project) would run past
// the policy's deny. The hook refuses anything but a regular file there,
// finds the daemon where it would without a record, and the deny stands.
func TestInstalledHookRecordThatIsAFIFO(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.writeFile(".env", "SECRET=1")
	w.installProject()
	w.startDaemon(toolgateBin)
	record := w.paths().DaemonRecordFile()
	if err := os.Remove(record); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(record, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(record) }) // before the daemon stops: it reads the record as it does
	start := time.Now()
	res, _, model := w.claudeP([]modelscript.Step{
		step(modelscript.ToolUse{ID: "toolu_fifo_env", Name: "Read", Input: map[string]string{"file_path": filepath.Join(w.project, ".env")}}),
	}, nil, interactiveStyle()...)
	t.Logf("claude -p took %v", time.Since(start).Round(time.Millisecond))
	if seen := model.ToolResults()["toolu_fifo_env"]; !seen.IsError || strings.Contains(seen.Text, "SECRET") {
		t.Errorf("the model saw %+v, want the policy's deny", seen)
	}
	os.Remove(record) // toolgate audit reads it too
	calls := w.audit(res.SessionID)
	if len(calls) != 1 || calls[0].Effect != "deny" || calls[0].ReasonCode != "secret_file" || calls[0].Executed {
		t.Errorf("audit: %+v, want the Read denied secret_file, not run", calls)
	}
}

// takeNextSession is what the model leaves running: it watches for a new
// Claude Code session (each claude writes ~/.claude/sessions/<pid>.json
// with its sessionId as it starts, well before its first tool call) and
// sends gate.sock an installed hook's event naming it first, with a policy
// of the model's own.
const takeNextSession = `import glob, json, os, subprocess, sys, time
rt, proj, hv, pv = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
pattern = os.path.expanduser("~/.claude/sessions/*.json")
taken = set()
print("watching", flush=True)
while True:
    for f in glob.glob(pattern):
        try: sid = json.load(open(f))["sessionId"]
        except Exception: continue
        if sid in taken: continue
        taken.add(sid)
        ev = {"session_id": sid, "cwd": "/", "hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": {"command": "true"}}
        req = {"event": ev, "installed": {"policy_path": os.path.join(proj, "allow.json"), "approval_timeout": "1m"}}
        out = subprocess.run(["curl", "-s", "--unix-socket", os.path.join(rt, "gate.sock"), "-X", "POST", "-H", hv + ": " + pv,
            "-H", "Content-Type: application/json", "-d", json.dumps(req), "http://toolgate/v1/hook"], capture_output=True, text=True)
        print("took", sid, time.time(), out.stdout, flush=True)
    time.sleep(0.01)
`

// A script of a toolgate run session (the default Landlock domain:
// pathname sockets are not scoped) tries to take the person's next
// interactive session, one gated by toolgate install's hook with Claude
// Code's sandbox: it sends gate.sock the new session's first event itself,
// naming a policy of its own, so that, were an installed session
// registered with whatever policy its first event names, every call of the
// person's session would be decided by the model's policy. The person's
// policy asks before "touch": the call must not run without anyone asked.
func TestAttackTakeTheNextInteractiveSession(t *testing.T) {
	t.Parallel()
	needTools(t, "curl", "python3")
	w := newWorld(t)
	w.writeFile("allow.json", `{"version": 1, "default": "allow", "rules": []}`)
	w.writeFile("take.py", takeNextSession)
	log := filepath.Join(w.root, "take.log")
	launch := w.detached(fmt.Sprintf(`exec python3 take.py "$XDG_RUNTIME_DIR/toolgate" "$PWD" %s %d`+"\n", api.HeaderProtocol, api.ProtocolVersion), log) +
		" " + waitFor(log, "watching")
	done := filepath.Join(w.root, "done")
	_, wait := w.runAsync(runArgs{policy: attackPolicy, claudeEnv: attackEnv(),
		script: []modelscript.Step{step(bash("toolu_rH_launch", launch)),
			step(bash("toolu_rH_stay", fmt.Sprintf("for i in $(seq 1 900); do [ -f %s ] && break; sleep 0.1; done", done)))}})
	logOf(t, log, "watching")
	// Meanwhile the person installs the hook, with the sandbox, and works
	// in the project.
	w.installProject()
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		w.claudeP([]modelscript.Step{step(bash("toolu_rH_ask", "touch unasked.txt"))}, nil, interactiveStyle()...)
	}()
	asked := false
	for deadline := time.Now().Add(runTimeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, out := w.toolgateOut("pending", "--json"); strings.Contains(out, "toolu_rH_ask") {
			asked = true
			break
		}
		select {
		case <-finished:
			deadline = time.Now()
		default:
		}
	}
	if asked {
		a := w.pendingApproval()
		w.toolgate("deny", a.Approval.ID)
	}
	<-finished
	os.WriteFile(done, nil, 0o600)
	wait()
	out := logOf(t, log, "took")
	if i := strings.LastIndex(out, "took "); i >= 0 {
		sid := strings.Fields(out[i:])[1]
		sess, err := w.client().Session(t.Context(), sid)
		t.Logf("the person's session as recorded: started %s policy %s (%v)", sess.StartedAt.Format("15:04:05.000000"), sess.PolicySHA256, err)
	}
	if !asked {
		t.Errorf("the person's session never asked about a call its policy asks about")
	}
	if _, err := os.Stat(filepath.Join(w.project, "unasked.txt")); err == nil {
		t.Errorf("the call ran without a person: the model's policy decided the person's session")
	}
}
