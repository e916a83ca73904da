package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/claudecode"
	"github.com/toolgate/toolgate/daemon"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/prompttool"
	"github.com/toolgate/toolgate/render"
)

// RunConfig configures one supervised claude.
type RunConfig struct {
	Paths           api.Paths
	PolicyPath      string
	ReportPath      string        // where to write the JSON report; none when ""
	ApprovalTimeout time.Duration // api.DefaultApprovalTimeout when 0
	OnAsk           string        // "wait" or "deny"
	Claude          string        // the claude executable
	ClaudeArgs      []string      // the user's own arguments
	Hook            string        // the toolgate-hook executable
	Self            string        // the toolgate executable (to start the daemon)
	Version         string
	Env             []string // claude's environment, before toolgate's additions
	Cwd, Home       string
	Stdin           io.Reader
	Stdout, Stderr  io.Writer
	Logger          *slog.Logger
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
	doc, err := os.ReadFile(cfg.PolicyPath)
	if err != nil {
		return Report{}, fmt.Errorf("read policy: %w", err)
	}
	pol, err := policy.Parse(cfg.PolicyPath, doc)
	if err != nil {
		return Report{}, err
	}
	if err := claudecode.CheckArgs(cfg.ClaudeArgs); err != nil {
		return Report{}, err
	}
	start := daemon.StartConfig{Paths: cfg.Paths, Self: cfg.Self, IdleExit: 5 * time.Minute}
	client, err := daemon.Ensure(ctx, start)
	if err != nil {
		return Report{}, &UnavailableError{err}
	}
	tools, errs := DiscoverTools(ctx, cfg.ClaudeArgs, cfg.Cwd, cfg.Env, 15*time.Second)
	for _, err := range errs {
		fmt.Fprintf(cfg.Stderr, "toolgate: warning: %v (its tools are not schema-checked)\n", err)
	}
	timeout := cfg.ApprovalTimeout
	if timeout <= 0 {
		timeout = api.DefaultApprovalTimeout
	}
	sess, err := client.Register(ctx, api.RegisterRequest{Policy: doc, PolicyName: cfg.PolicyPath,
		ApprovalTimeout: api.Duration(timeout), OnAsk: cfg.OnAsk, Cwd: cfg.Cwd, Home: cfg.Home,
		SupervisorPID: os.Getpid(), Tools: tools})
	if err != nil {
		return Report{}, &UnavailableError{fmt.Errorf("register the session: %w", err)}
	}
	r := &runner{cfg: cfg, log: log, client: client, start: start, session: sess.ID, timeout: timeout}
	report, err := r.run(ctx)
	report.Policy = ReportPolicy{Path: cfg.PolicyPath, Version: pol.Version, SHA256: pol.SHA256}
	return report, err
}

// UnavailableError is the gate failing to start: claude was not started.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string { return "the gate could not start: " + e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

type runner struct {
	cfg     RunConfig
	log     *slog.Logger
	client  *api.Client
	start   daemon.StartConfig
	session string
	timeout time.Duration
	spool   string

	mu          sync.Mutex
	restartWarn bool
}

func (r *runner) run(ctx context.Context) (Report, error) {
	started := time.Now().UTC()
	if err := becomeSubreaper(); err != nil {
		r.log.Warn("not a child subreaper: processes the model detaches leave the session's parent chain", "err", err)
	}
	tmp, err := os.MkdirTemp("", "toolgate-run-")
	if err != nil {
		return Report{}, err
	}
	defer os.RemoveAll(tmp)
	host, err := prompttool.Listen(&promptDecider{r: r}, r.cfg.Version)
	if err != nil {
		return Report{}, &UnavailableError{err}
	}
	defer host.Close()
	// The spool stays until the daemon has put it in the ledger (it does
	// when the session ends, or when it starts again).
	r.spool = r.cfg.Paths.SpoolFile(r.session)
	args, err := r.claudeArgs(tmp, host)
	if err != nil {
		return Report{}, err
	}
	cmd := exec.Command(r.cfg.Claude, args...)
	cmd.Dir = r.cfg.Cwd
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r.cfg.Stdin, r.cfg.Stdout, r.cfg.Stderr
	cmd.Env = append(append([]string{}, r.cfg.Env...),
		"TOOLGATE_SESSION="+r.session, "TOOLGATE_SOCKET="+r.cfg.Paths.Socket(), "TOOLGATE_SPOOL="+r.spool)
	c, err := startChild(cmd)
	if err != nil {
		return Report{}, fmt.Errorf("start claude: %w", err)
	}
	if err := r.client.SetClaudePID(ctx, r.session, cmd.Process.Pid); err != nil {
		r.log.Warn("tell the daemon claude's pid", "err", err)
	}
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	go r.watchDaemon(watchCtx)
	claudeCode := c.wait()
	stopWatch()
	c.stopGroup(3 * time.Second)
	r.endOrphans(ctx)
	return r.finish(context.WithoutCancel(ctx), started, claudeCode), nil
}

// endOrphans ends what the session detached, sparing the daemon (which
// this process may have started, and so be the parent of).
func (r *runner) endOrphans(ctx context.Context) {
	keep := map[int]bool{}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if st, err := r.client.Status(sctx); err == nil {
		keep[st.PID] = true
	}
	endOrphans(keep, 2*time.Second)
}

// claudeArgs writes the settings and MCP config files (0600, in a private
// temporary directory: the prompt tool's token is never on a command line)
// and returns claude's arguments: toolgate's, then the user's.
func (r *runner) claudeArgs(dir string, host *prompttool.Host) ([]string, error) {
	settings := claudecode.HooksSettings(claudecode.CommandLine(r.cfg.Hook),
		api.PreToolUse, api.PostToolUse, api.PostToolUseFailure, api.PostToolBatch)
	// The CLI's own timeout for the prompt tool must be longer than any
	// approval wait, so that the gate's expiry always answers first.
	mcpTimeout := (r.timeout + 5*time.Minute).Milliseconds()
	mcpConfig := map[string]any{"mcpServers": map[string]any{"toolgate": map[string]any{
		"type": "http", "url": host.URL, "headers": map[string]string{"Authorization": "Bearer " + host.Token},
		"timeout": mcpTimeout}}}
	mcpDoc, _ := json.Marshal(mcpConfig)
	settingsFile, mcpFile := filepath.Join(dir, "settings.json"), filepath.Join(dir, "mcp.json")
	for path, doc := range map[string][]byte{settingsFile: settings, mcpFile: mcpDoc} {
		if err := os.WriteFile(path, doc, 0o600); err != nil {
			return nil, err
		}
	}
	args := []string{"--settings", settingsFile, "--mcp-config", mcpFile, "--permission-prompt-tool", PromptToolName}
	return append(args, r.cfg.ClaudeArgs...), nil
}

// watchDaemon brings the daemon back when it dies while claude runs. The
// daemon lock tells whether it lives.
func (r *runner) watchDaemon(ctx context.Context) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !daemon.Alive(r.cfg.Paths) {
			r.restart(ctx)
		}
	}
}

// restart starts the daemon again; it says so once when it cannot.
func (r *runner) restart(ctx context.Context) bool {
	_, err := daemon.Ensure(ctx, r.start)
	if err == nil {
		r.log.Info("daemon restarted")
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.restartWarn {
		r.restartWarn = true
		fmt.Fprintf(r.cfg.Stderr, "toolgate: the daemon died and could not be restarted: %v; calls are denied gate_unavailable until it is back\n", err)
	}
	return false
}

// finish ends the session and builds the report.
func (r *runner) finish(ctx context.Context, started time.Time, claudeCode int) Report {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var warnings []string
	spooled, _ := api.ReadSpool(r.spool) // before the daemon, at the session's end, ingests and removes it
	_, err := r.client.EndSession(ctx, r.session)
	if api.IsUnavailable(err) && r.restart(ctx) {
		_, err = r.client.EndSession(ctx, r.session)
	}
	if err != nil {
		warnings = append(warnings, "end the session: "+err.Error())
	}
	calls, err := r.client.SessionCalls(ctx, r.session)
	if err != nil {
		warnings = append(warnings, "the daemon's record of the session is unavailable: "+err.Error())
	}
	report := buildReport(r.session, calls, spooled)
	report.SessionID, report.StartedAt, report.EndedAt = r.session, started, time.Now().UTC()
	report.ClaudeExitCode, report.Warnings = claudeCode, warnings
	report.ExitCode = report.exitCode()
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

// promptDecider answers the prompt tool through the daemon. An ask waits
// for a person, telling the CLI it is still waiting (progress), and
// survives a restart of the daemon: it asks again for the same
// tool_use_id and finds the same approval. When the daemon cannot be
// reached even after a restart, the call is denied gate_unavailable.
type promptDecider struct{ r *runner }

// ProgressInterval is how often the prompt tool tells the CLI it still
// waits for a person; the CLI's idle watchdog would abort it otherwise.
const ProgressInterval = 2 * time.Second

func (p *promptDecider) Decide(ctx context.Context, req api.PromptRequest, progress func(string)) (api.Verdict, error) {
	req.SessionID = p.r.session
	announced := false
	for attempt := 0; ; attempt++ {
		v, err := p.r.client.Prompt(ctx, req)
		if err == nil && v.Effect == api.EffectAsk {
			if !announced {
				announced = true
				p.r.announce(req, v)
			}
			v, err = p.wait(ctx, v.ApprovalID, progress)
		}
		if err == nil {
			return v, nil
		}
		if ctx.Err() != nil {
			return api.Verdict{}, ctx.Err() // the CLI gave up on this call
		}
		if api.IsUnavailable(err) && attempt < 3 && p.r.restart(ctx) {
			continue // the daemon is back: ask again, it finds the same approval
		}
		p.r.log.Error("permission prompt", "tool_use_id", req.ToolUseID, "err", err)
		v = api.Deny(api.ReasonGateUnavailable, api.SourceGate)
		p.r.spoolDeny(req, v)
		return v, nil
	}
}

// wait waits for the approval, sending progress to the CLI meanwhile.
func (p *promptDecider) wait(ctx context.Context, id string, progress func(string)) (api.Verdict, error) {
	type result struct {
		v   api.Verdict
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := p.r.client.Wait(ctx, id)
		done <- result{v, err}
	}()
	if progress == nil {
		progress = func(string) {}
	}
	tick := time.NewTicker(ProgressInterval)
	defer tick.Stop()
	// At once: the first notification of a request may be lost while the
	// response turns into an event stream; the later ones are not.
	progress("waiting for a person to approve " + id)
	for {
		select {
		case r := <-done:
			return r.v, r.err
		case <-tick.C:
			progress("waiting for a person to approve " + id)
		}
	}
}

// announce prints the one progress line of an ask on stderr.
func (r *runner) announce(req api.PromptRequest, v api.Verdict) {
	left := ""
	if v.ExpiresAt != nil {
		left = "; expires in " + time.Until(*v.ExpiresAt).Round(time.Second).String()
	}
	fmt.Fprintf(r.cfg.Stderr, "toolgate: waiting for approval %s (%s: %s) — toolgate approve %s%s\n",
		v.ApprovalID, req.ToolName, render.Summary(req.ToolName, req.Input, 60), v.ApprovalID, left)
}

// spoolDeny records a call denied without the daemon, as the hook does.
func (r *runner) spoolDeny(req api.PromptRequest, v api.Verdict) {
	api.AppendSpool(r.spool, api.SpoolLine{Time: time.Now().UTC(), Event: api.PreToolUse, ToolUseID: req.ToolUseID,
		ToolName: req.ToolName, ReasonCode: v.ReasonCode})
}
