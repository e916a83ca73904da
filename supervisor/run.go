package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tidwall/sjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/claudecode"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/contain"
	"github.com/toolgate/toolgate/internal/proc"
	"github.com/toolgate/toolgate/paths"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/prompttool"
	"github.com/toolgate/toolgate/spool"
	"golang.org/x/sys/unix"
)

// RunConfig configures one supervised claude.
type RunConfig struct {
	Paths           paths.Paths
	PolicyPath      string
	ReportPath      string        // where to write the JSON report; none when ""
	ApprovalTimeout time.Duration // api.DefaultApprovalTimeout when 0
	OnAsk           string        // api.OnAskWait, OnAskDeny or OnAskDefer
	// Resume, when set, is a deferred session to take up again (toolgate
	// resume) instead of registering a new one; ClaudeArgs then resume
	// Claude Code's session (ResumeArgs).
	Resume *api.DeferredSession
	// PolicyChanged lets a resume run under a policy whose sha256 differs
	// from the one the session started with.
	PolicyChanged bool
	// AllowOtherHooks lets claude run with PreToolUse or PermissionRequest
	// hooks of other settings layers beside toolgate's.
	AllowOtherHooks bool
	Claude          string   // the claude executable
	ClaudeArgs      []string // the user's own arguments
	Hook            string   // the toolgate-hook executable
	HookTransport   string   // HookAuto ("" too), HookHTTP or HookCommand
	Self            string   // the toolgate executable (to start the daemon; the daemon must run it)
	ConfigDir       string   // toolgate's configuration directory ($XDG_CONFIG_HOME/toolgate)
	Containment     string   // a contain mode: contain.Auto (""), Strict or Off
	// Writable are the trees beside the project and the session's temp
	// dir that Bash commands may write (caches a user declares).
	Writable []string
	// NoNetwork cuts Bash commands off the network (strict does too).
	NoNetwork      bool
	MCPTimeout     time.Duration // bounds the listing of each MCP server's tools
	MCPCacheTTL    time.Duration // how long listed tools are kept; not at all when 0
	Version        string
	Env            []string // claude's environment, before toolgate's additions
	Cwd, Home      string
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Logger         *slog.Logger
}

// PromptToolName is the prompt tool as Claude Code names it.
const PromptToolName = "mcp__toolgate__" + prompttool.ToolName

// Run gates one claude process from start to end and returns the report;
// its ExitCode is what toolgate run exits with. An error means claude was
// not started: a *policy.LoadErrors (exit 78), a *claudecode.ArgsError
// (64), or the gate could not start (69).
func Run(ctx context.Context, cfg RunConfig) (Report, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Bash commands get a temp dir of the session's own: the system's is
	// shared with everything else the user runs.
	tmp, err := os.MkdirTemp("", "toolgate-tmp-")
	if err != nil {
		return Report{}, &UnavailableError{err}
	}
	defer os.RemoveAll(tmp)
	// What toolgate gives claude (its settings, the prompt tool's token,
	// the link Bash commands run bash at) lives in a private directory the
	// session's tools may not touch.
	files, err := os.MkdirTemp("", "toolgate-run-")
	if err != nil {
		return Report{}, &UnavailableError{err}
	}
	defer os.RemoveAll(files)
	// Whether the Bash boundary holds here is learnt by trying it (a bash
	// started in it): that runs while the policy and the settings are
	// read, and ends before anything else starts.
	contained := startContainment(cfg, files, tmp)
	defer contained() // before the directories it uses go
	doc, err := os.ReadFile(cfg.PolicyPath)
	if err != nil {
		return Report{}, fmt.Errorf("read policy: %w", err)
	}
	pol, err := policy.Parse(cfg.PolicyPath, doc)
	if err != nil {
		return Report{}, err
	}
	if cfg.Resume != nil && pol.SHA256 != cfg.Resume.Session.PolicySHA256 && !cfg.PolicyChanged {
		return Report{}, &PolicyChangedError{Path: cfg.PolicyPath, Was: cfg.Resume.Session.PolicySHA256, Now: pol.SHA256}
	}
	if err := claudecode.CheckArgs(cfg.ClaudeArgs); err != nil {
		return Report{}, err
	}
	if err := checkSettings(settingsLayers(claudeDir(cfg), cfg.Cwd), claudecode.SettingsArgs(cfg.ClaudeArgs), cfg.AllowOtherHooks, cfg.Hook, cfg.Cwd); err != nil {
		return Report{}, err
	}
	if cfg.ReportPath != "" {
		if err := canWriteReport(cfg.ReportPath); err != nil {
			return Report{}, &ReportError{Path: cfg.ReportPath, Err: err}
		}
	}
	if cfg.HookTransport, err = hookTransport(cfg); err != nil {
		return Report{}, err
	}
	c, err := contained()
	if err != nil {
		return Report{}, &UnavailableError{err}
	}
	level := c.level
	if n := len(c.start.found); level.Bounded() && n > maxNestedPins {
		fmt.Fprintf(cfg.Stderr, "toolgate: WARNING: the project holds %d nested repositories, .claude directories and .mcp.json files: the Bash boundary makes the first %d read-only, not the rest\n", n, maxNestedPins)
	}
	switch {
	case !level.Contained():
		fmt.Fprintf(cfg.Stderr, "toolgate: WARNING: claude runs uncontained: %s\n", level.Detail)
	case !level.Bounded():
		fmt.Fprintf(cfg.Stderr, "toolgate: WARNING: Bash commands run without toolgate's boundary: %s\n", level.Detail)
	}
	policyPath, err := filepath.Abs(cfg.PolicyPath)
	if err != nil {
		return Report{}, err
	}
	r := &runner{cfg: cfg, log: log, level: level, shell: c.shell, start: c.start, tmp: tmp, files: files, policy: ReportPolicy{Path: policyPath, Version: pol.Version, SHA256: pol.SHA256}}
	r.gate = &trustedGate{start: client.StartConfig{Paths: cfg.Paths, Self: cfg.Self, IdleExit: 5 * time.Minute}, onLost: r.gateLost}
	if r.client, err = r.gate.connect(ctx); err != nil {
		return Report{}, &UnavailableError{err}
	}
	r.client.KeepAlive = true // every hook event of the session goes through it
	defer r.client.CloseIdle()
	r.cfg.Paths = r.gate.Paths() // the daemon's, wherever this environment would have put them
	// The cache is beside the ledger, where the session's tools may not
	// write: the schemas in it decide calls.
	disc := Discovery{Timeout: cfg.MCPTimeout, CacheDir: filepath.Join(r.cfg.Paths.StateDir, "mcp-tools"),
		CacheTTL: cfg.MCPCacheTTL, Notice: cfg.Stderr}
	tools, errs := disc.DiscoverTools(ctx, cfg.ClaudeArgs, cfg.Cwd, cfg.Env)
	for _, err := range errs {
		fmt.Fprintf(cfg.Stderr, "toolgate: warning: %v (its tools are not schema-checked)\n", err)
	}
	r.timeout = cfg.ApprovalTimeout
	if r.timeout <= 0 {
		r.timeout = api.DefaultApprovalTimeout
	}
	r.askTimeout = AskTimeout(r.timeout, pol.LongestApprovalTimeout())
	var sess api.Session
	if cfg.Resume != nil {
		// The session goes on under the policy it was recorded with; its
		// deferred call gets the person's decision when Claude Code
		// proposes it again.
		sess, err = r.client.Resume(ctx, cfg.Resume.Session.ID, api.ResumeRequest{Contained: level.Contained(), Protected: r.protectedExtra(), Writable: r.fileToolsWritable()})
	} else {
		sess, err = r.client.Register(ctx, api.RegisterRequest{Policy: doc, PolicyName: cfg.PolicyPath,
			ApprovalTimeout: api.Duration(r.timeout), OnAsk: cfg.OnAsk, Cwd: cfg.Cwd, Home: cfg.Home,
			SupervisorPID: os.Getpid(), Tools: tools, Contained: level.Contained(), Protected: r.protectedExtra(), Writable: r.fileToolsWritable(),
			Claude: cfg.Claude, ClaudeArgs: cfg.ClaudeArgs})
	}
	var se *client.StatusError
	if errors.As(err, &se) && se.Err.Code == "not_deferred" {
		return Report{}, ErrAlreadyResumed
	}
	if err != nil {
		return Report{}, &UnavailableError{fmt.Errorf("register the session: %w", err)}
	}
	r.session = sess.ID
	return r.run(ctx)
}

// containment is what the session gets: its level, the shell its Bash
// commands enter the boundary through, and what the project held at the
// start that the boundary pins.
type containment struct {
	level contain.Level
	shell contain.Shell
	start projectConfig
}

// startContainment finds, in the background, the containment the session
// gets (contain.ForRun, which starts a bash to see the boundary hold), and
// returns what waits for it.
func startContainment(cfg RunConfig, files, tmp string) func() (containment, error) {
	type found struct {
		containment
		err error
	}
	done := make(chan found, 1)
	go func() {
		var f found
		if cfg.Containment != contain.Off && cfg.Containment != contain.Landlock {
			f.start = nestedConfig(cfg.Cwd)
			f.start.gitPaths = gitConfigPaths(cfg.Cwd, cfg.Home)
			for _, p := range f.start.gitPaths {
				if _, err := os.Lstat(p); os.IsNotExist(err) {
					f.start.missing = append(f.start.missing, p)
				}
			}
		}
		if f.shell, f.err = sessionShell(cfg, files); f.err == nil {
			f.level, f.err = contain.ForRun(cfg.Containment, f.shell, boundary(cfg, tmp, files, f.start))
		}
		done <- f
	}()
	wait := sync.OnceValue(func() found { return <-done })
	return func() (containment, error) {
		f := wait()
		return f.containment, f.err
	}
}

// PolicyChangedError is a resume under a policy that is not the one the
// session was recorded with.
type PolicyChangedError struct{ Path, Was, Now string }

func (e *PolicyChangedError) Error() string {
	return fmt.Sprintf("%s changed since the session started (sha256 %.12s, now %.12s): resume it under the same policy, or pass --policy-changed",
		e.Path, e.Was, e.Now)
}

// ErrAlreadyResumed is a deferred session another resume took up first.
var ErrAlreadyResumed = errors.New("another toolgate resume took the session up first")

// ReportError is a --report file that cannot be written: found before
// claude starts, not after it ran in full.
type ReportError struct {
	Path string
	Err  error
}

func (e *ReportError) Error() string {
	return "the report cannot be written to " + e.Path + ": " + e.Err.Error()
}
func (e *ReportError) Unwrap() error { return e.Err }

// NotContainedError is a contained claude that did not start: the hook
// binary run starts it through has no contain mode (another build's), or
// its contain failed (it said why on stderr).
type NotContainedError struct {
	Hook string
	Err  error
}

func (e *NotContainedError) Error() string {
	return "claude did not start: " + e.Hook + " contain " + e.Err.Error()
}
func (e *NotContainedError) Unwrap() error { return e.Err }

// ErrClaudeExec is a contain that entered the domain but whose exec of
// claude failed (it says why on stderr).
var ErrClaudeExec = errors.New("could not execute claude (it says why above)")

// UnavailableError is the gate failing to start: claude was not started.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string { return "the gate could not start: " + e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

type runner struct {
	cfg     RunConfig
	policy  ReportPolicy // the policy that decides, for the report
	log     *slog.Logger
	level   contain.Level
	shell   contain.Shell // how its Bash commands enter level.Boundary
	start   projectConfig // what the project held at the start
	gate    *trustedGate
	client  *client.Client
	session string
	timeout time.Duration
	// askTimeout is what Claude Code waits for an ask's answer
	// (AskTimeout).
	askTimeout  time.Duration
	spool       string
	files       string // the private directory of claude's settings (and, for the hook binary, its MCP configuration)
	tmp         string // the session's temp dir (TMPDIR)
	made        *madeLater
	interrupted bool     // a signal stopped the run (set once claude ended)
	pins        []pinned // what claude runs or reads from run's setup (pinFile), fixed before it starts
	// transcripts, with http hooks, reads what became of each call.
	transcripts *transcripts
	// claudePID is claude's pid once it started: the http hook answers
	// only connections it holds (hookServer.fromClaude). notClaude counts
	// the requests it refused as another process's.
	claudePID atomic.Int64
	notClaude atomic.Int64

	mu       sync.Mutex
	child    *child              // claude, once started
	answered map[string]api.Call // what run answered (prompt tool, http hook), by tool_use_id
	stop     error               // why the session was stopped, with the gate still trusted
}

// heldByClaude reports whether claude holds the other end of c, a
// connection to run's listener: the model's code can read the token claude
// sends (it reads what claude reads), but it cannot make a connection
// that is claude's.
func (r *runner) heldByClaude(c net.Conn) bool {
	pid := int(r.claudePID.Load())
	if pid <= 0 {
		return false
	}
	ok, err := proc.OwnsTCPPeer(pid, c)
	if err != nil {
		r.log.Warn("http hook: whose connection", "remote", c.RemoteAddr(), "err", err)
	}
	return ok
}

func (r *runner) run(ctx context.Context) (Report, error) {
	started := time.Now().UTC()
	if err := becomeSubreaper(); err != nil {
		r.log.Warn("not a child subreaper: processes the model detaches leave the session's parent chain", "err", err)
	}
	// The hook binary answers an ask "ask", and Claude Code asks the
	// prompt tool, which waits for the person; run's http hook waits
	// itself, and no MCP server is registered (it costs the CLI's start
	// about 100 ms).
	var prompts prompttool.Decider
	if r.cfg.HookTransport == HookCommand {
		prompts = &promptDecider{r: r}
	}
	host, err := prompttool.Listen(prompts, r.cfg.Version)
	if err != nil {
		return Report{}, &UnavailableError{err}
	}
	defer host.Close()
	if r.cfg.HookTransport == HookHTTP {
		r.transcripts = newTranscripts(r.client, r.session, claudeDir(r.cfg))
		r.transcripts.undecided = func(ids []string) {
			r.stopSession(fmt.Errorf("claude's transcript says calls ran that the gate did not allow (%s): Claude Code's hooks do not reach it, or its transcript was written by something else", strings.Join(ids, ", ")))
		}
		host.Handle(hookPath, &hookServer{r: r, authorized: host.Authorized, deadline: HookDeadline, transcript: r.transcripts.add,
			fromClaude: func(req *http.Request) bool { return prompttool.PeerIs(req, r.heldByClaude) }})
	}
	// The spool stays until the daemon has put it in the ledger (it does
	// when the session ends, or when it starts again).
	r.spool = r.cfg.Paths.SpoolFile(r.session)
	args, err := r.claudeArgs(r.files, host)
	if err != nil {
		return Report{}, err
	}
	// claude dies with this process (PR_SET_PDEATHSIG, sent when the
	// thread that started it ends: this goroutine keeps its thread).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	name, argv, err := containedCommand(r.level, r.cfg.Hook, r.cfg.Claude, args)
	if err != nil {
		return Report{}, err
	}
	if err := r.pinFiles(); err != nil {
		return Report{}, &UnavailableError{err}
	}
	cmd := exec.Command(name, argv...)
	cmd.Dir = r.cfg.Cwd
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r.cfg.Stdin, r.cfg.Stdout, r.cfg.Stderr
	cmd.Env = append(append([]string{}, r.cfg.Env...), "TOOLGATE_SESSION="+r.session,
		"TOOLGATE_SOCKET="+r.cfg.Paths.Socket(), "TOOLGATE_SPOOL="+r.spool, "TOOLGATE_DAEMON_EXE="+r.cfg.Self)
	if r.level.Contained() {
		cmd.Env = append(cmd.Env, "TOOLGATE_CONTAINED=1")
	}
	if r.level.Bounded() {
		if cmd.Env, err = r.boundaryEnv(cmd.Env); err != nil {
			return Report{}, err
		}
		r.made = newMadeLater(r.cfg.Cwd, r.tmp, r.session, r.start)
	}
	if r.cfg.HookTransport == HookHTTP {
		cmd.Env, _ = noProxyLoopback(cmd.Env)
	}
	var ready *os.File
	if r.level.Contained() {
		rd, wr, err := os.Pipe()
		if err != nil {
			return Report{}, fmt.Errorf("start claude: %w", err)
		}
		defer rd.Close()
		cmd.ExtraFiles, ready = []*os.File{wr}, rd // wr is containReadyFD in the child
	}
	c, err := startChild(cmd)
	for _, f := range cmd.ExtraFiles {
		f.Close() // the child's copy is the one that counts
	}
	if err != nil {
		return Report{}, fmt.Errorf("start claude: %w", err)
	}
	r.claudePID.Store(int64(cmd.Process.Pid)) // what it execs keeps the pid: claude's own
	if ready != nil {
		if err := awaitContained(ready, containDeadline); err != nil {
			unix.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			c.wait() // reaped, and signals no longer forwarded
			return Report{}, &NotContainedError{Hook: r.cfg.Hook, Err: err}
		}
	}
	r.mu.Lock()
	r.child = c
	r.mu.Unlock()
	if err := r.client.SetClaudePID(ctx, r.session, cmd.Process.Pid); err != nil {
		r.log.Warn("tell the daemon claude's pid", "err", err)
	}
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	var following sync.WaitGroup
	go r.gate.watch(watchCtx)
	// http hooks check the layers at every verdict too (hookServer), but
	// a layer the model's code writes and puts back between two calls is
	// one Claude Code may have read meanwhile: the poll sees it.
	go r.watchSettings(watchCtx)
	if r.transcripts != nil {
		following.Go(func() { r.transcripts.follow(watchCtx) })
	}
	claudeCode := c.wait()
	r.interrupted = c.interrupted
	stopWatch()
	following.Wait()
	c.stopGroup(3 * time.Second)
	r.endOrphans(ctx)
	return r.finish(context.WithoutCancel(ctx), started, claudeCode), nil
}

// containReadyFD is the descriptor on which toolgate-hook contain says it
// reached claude's exec (the first of cmd.ExtraFiles).
const containReadyFD = 3

// containDeadline bounds the wait for it: the contain mode takes a few
// milliseconds; a hook binary of another build may never say it (it reads
// an event on stdin instead).
const containDeadline = 10 * time.Second

// awaitContained waits until what run started as toolgate-hook contain
// says it is executing claude in the domain, and the descriptor closes
// with that exec. Anything else (a hook binary without the mode, a contain
// that failed, an exec of claude that failed) is an error: claude did not
// start.
func awaitContained(ready *os.File, deadline time.Duration) error {
	ready.SetReadDeadline(time.Now().Add(deadline))
	said, err := io.ReadAll(io.LimitReader(ready, 2048))
	switch {
	case os.IsTimeout(err):
		return fmt.Errorf("said nothing within %s", deadline)
	case err != nil:
		return err
	case string(said) == contain.Ready+contain.ExecFailed:
		return ErrClaudeExec
	case strings.HasPrefix(string(said), contain.Ready+", but "):
		return errors.New(strings.TrimPrefix(string(said), contain.Ready+", but "))
	case string(said) != contain.Ready:
		return fmt.Errorf("did not say it started claude (%q)", said)
	}
	return nil
}

// hookPath is where run's listener takes Claude Code's http hooks.
const hookPath = "/hook"

// gateLost stops the session: no call can be decided any more, so claude
// must not go on proposing them.
func (r *runner) gateLost(err error) {
	fmt.Fprintf(r.cfg.Stderr, "toolgate: %v; every call is denied gate_unavailable and claude is stopped\n", err)
	r.mu.Lock()
	c := r.child
	r.mu.Unlock()
	if c != nil {
		go c.stopGroup(3 * time.Second)
	}
}

// stopSession stops claude because the session can no longer be gated
// although the daemon is the trusted one (calls ran that no hook proposed):
// every call is denied from then on, and run exits 69, saying why.
func (r *runner) stopSession(err error) {
	r.mu.Lock()
	first := r.stop == nil
	if first {
		r.stop = err
	}
	r.mu.Unlock()
	if first {
		r.gateLost(err)
	}
}

// stopped is why the session was stopped, or nil.
func (r *runner) stopped() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stop
}

// endOrphans ends what the session detached, sparing the daemon (which
// this process may have started, and so be the parent of).
func (r *runner) endOrphans(ctx context.Context) {
	r.gate.mu.Lock()
	keep := map[int]bool{r.gate.pid: true}
	r.gate.mu.Unlock()
	endOrphans(keep, 2*time.Second)
}

// askMargin is how much longer than the longest approval wait Claude
// Code waits for an ask's answer.
const askMargin = 5 * time.Minute

// AskTimeout is the timeout Claude Code gives what waits for a person
// (run's http hook, or the prompt tool the hook binary's asks go to):
// past the longest wait an ask of the session may have, the run's or a
// rule's approval_timeout, so that the gate's expiry always answers first
// (the CLI's timeout is a hard limit, which the prompt tool's progress
// does not extend, and a hook it ends is no verdict).
func AskTimeout(session, longestRule time.Duration) time.Duration {
	return max(session, longestRule) + askMargin
}

// protectedExtra is what the session's guard protects beside the gate's
// own paths and Claude Code's settings.
func (r *runner) protectedExtra() []string {
	return []string{r.cfg.PolicyPath, r.files, r.cfg.Hook, r.cfg.Self, claudeDir(r.cfg)}
}

// claudeArgs writes the settings and, for the hook binary, the MCP config
// (0600, in a private temporary directory: the listener's token is never
// on a command line) and returns claude's arguments: toolgate's, then the
// user's.
func (r *runner) claudeArgs(dir string, host *prompttool.Host) ([]string, error) {
	// With http hooks only PreToolUse is a hook: what ran and what the
	// model saw come from claude's transcript, and an ask waits in the
	// hook, which Claude Code gives as long as the prompt tool. The hook
	// binary reports them itself (PostToolUse, its failure twin,
	// PostToolBatch), and an ask goes to the prompt tool.
	_, noProxy := noProxyLoopback(r.cfg.Env)
	hookTimeout := int((r.askTimeout + time.Second - 1) / time.Second)
	settings := claudecode.HTTPHooksSettings(host.Base+hookPath, host.Token, hookTimeout, noProxy, api.PreToolUse)
	if r.cfg.HookTransport == HookCommand {
		settings = claudecode.HooksSettings(claudecode.CommandLine(r.cfg.Hook),
			api.PreToolUse, api.PostToolUse, api.PostToolUseFailure, api.PostToolBatch)
	}
	if r.level.Bounded() {
		// The same as claude's environment, in the layer every other one
		// but managed settings gives way to: an installed env block's
		// boundary is not the session's.
		env, err := r.boundaryEnv(nil)
		if err != nil {
			return nil, err
		}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			settings, _ = sjson.SetBytes(settings, "env."+k, v)
		}
	}
	settingsFile := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(settingsFile, settings, 0o600); err != nil {
		return nil, err
	}
	args := []string{"--settings", settingsFile}
	if r.cfg.HookTransport == HookCommand {
		mcpConfig := map[string]any{"mcpServers": map[string]any{"toolgate": map[string]any{
			"type": "http", "url": host.URL, "headers": map[string]string{"Authorization": "Bearer " + host.Token},
			"timeout": r.askTimeout.Milliseconds()}}}
		mcpDoc, _ := json.Marshal(mcpConfig)
		mcpFile := filepath.Join(dir, "mcp.json")
		if err := os.WriteFile(mcpFile, mcpDoc, 0o600); err != nil {
			return nil, err
		}
		args = append(args, "--mcp-config", mcpFile, "--permission-prompt-tool", PromptToolName)
	}
	return append(args, r.cfg.ClaudeArgs...), nil
}

// finish ends the session and builds the report: the daemon's record of
// the session, what the hook spooled, and what run itself saw. A record
// the daemon cannot give, or a gate lost on the way, makes it exit 69: an
// empty answer must never read as "nothing happened".
func (r *runner) finish(ctx context.Context, started time.Time, claudeCode int) Report {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var warnings []string
	if r.transcripts != nil {
		// What the last calls did, before the session ends.
		if err := r.transcripts.flush(ctx); err != nil && !(client.IsUnavailable(err) && r.gate.restart(ctx) && r.transcripts.flush(ctx) == nil) {
			warnings = append(warnings, err.Error())
		}
		warnings = append(warnings, r.transcripts.problems()...)
	}
	if r.made != nil {
		warnings = append(warnings, r.made.finish()...)
	}
	if n := r.notClaude.Load(); n > 0 {
		warnings = append(warnings, fmt.Sprintf("%d request(s) to the hook endpoint carried its token but came from a process other than claude, and were refused: "+
			"the session's own commands read the token and sent hook events of their own", n))
	}
	spooled, _ := spool.Read(r.spool) // before the daemon, at the session's end, ingests and removes it
	gate := r.client
	if r.gate.Lost() != nil {
		// Claude is stopped and no call is decided any more, but the
		// session's record is still the trusted daemon's, once it has its
		// socket back from the impostor: the report must not read as if
		// nothing happened.
		gate = r.gate.recordClient(ctx)
	}
	// A run someone stopped withdraws what still waits for a person: no
	// time ran out, and nobody decided.
	why := api.EndEnded
	if r.interrupted {
		why = api.EndInterrupted
	}
	ended, err := gate.EndSessionFor(ctx, r.session, why)
	if client.IsUnavailable(err) && r.gate.restart(ctx) {
		ended, err = gate.EndSessionFor(ctx, r.session, why)
	}
	if err != nil {
		warnings = append(warnings, "end the session: "+err.Error())
	}
	calls, recErr := gate.SessionCalls(ctx, r.session)
	if recErr != nil {
		warnings = append(warnings, "the daemon's record of the session is unavailable: "+recErr.Error())
	}
	report := buildReport(r.session, calls, spooled)
	r.mu.Lock()
	warnings = append(warnings, report.addUnrecorded(r.answered)...)
	r.mu.Unlock()
	report.SessionID, report.Policy, report.StartedAt, report.EndedAt = r.session, r.policy, started, time.Now().UTC()
	report.ClaudeExitCode, report.Containment, report.AuditHead = claudeCode, r.level, ended.AuditHead
	report.HookTransport = r.cfg.HookTransport
	report.ExitCode = report.exitCode()
	if r.interrupted {
		report.ExitCode = ExitInterrupted
	}
	lost := r.gate.Lost()
	if lost == nil {
		lost = r.stopped()
	}
	if lost != nil || recErr != nil {
		if lost != nil {
			report.GateLost = lost.Error()
		}
		report.ExitCode = ExitUnavailable
	}
	report.Warnings = warnings
	if r.cfg.ReportPath != "" {
		if err := writeReport(r.cfg.ReportPath, report); err != nil {
			fmt.Fprintf(r.cfg.Stderr, "toolgate: %v\n", err)
		}
	}
	for _, w := range warnings {
		fmt.Fprintf(r.cfg.Stderr, "toolgate: warning: %s\n", w)
	}
	fmt.Fprintln(r.cfg.Stderr, report.Summary())
	return report
}

// claudeDir is Claude Code's configuration directory for claude's
// environment: $CLAUDE_CONFIG_DIR, or ~/.claude.
func claudeDir(cfg RunConfig) string {
	for i := len(cfg.Env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(cfg.Env[i], "CLAUDE_CONFIG_DIR="); ok && v != "" {
			return v
		}
	}
	if cfg.Home == "" {
		return ""
	}
	return filepath.Join(cfg.Home, ".claude")
}
