// Package demo is toolgate demo: toolgate's main job, end to end, with no
// API key. It runs the real Claude Code CLI under toolgate run, in a
// scratch project, against a scripted model on loopback (package
// modelscript), and walks through what matters: an allowed command, a
// denied secret read, an MCP call with invalid input, and an ask that a
// person approves. Then it prints the session's audit, one sentence a line.
package demo

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/modelscript"
	"github.com/toolgate/toolgate/paths"
	"github.com/toolgate/toolgate/supervisor"
)

//go:embed policy.json
var demoPolicy []byte

// Config configures a demo.
type Config struct {
	Self        string // the toolgate executable
	Claude      string // the claude executable
	Paths       paths.Paths
	AutoApprove time.Duration // approve the ask after this long; wait for a person when 0
	Keep        bool          // keep the scratch project
	Env         []string
	Stdout      io.Writer
	Stderr      io.Writer
}

// The demo's calls, in the order the scripted model proposes them. Each
// run adds its own suffix: a tool_use_id runs once, ever, so a second demo
// reusing the first one's ids would be denied duplicate_tool_use_id.
const (
	idAllow = "toolu_demo_01_allow"
	idEnv   = "toolu_demo_02_env"
	idPR    = "toolu_demo_03_pr"
	idAsk   = "toolu_demo_04_ask"
)

// ids are one run's tool_use_ids.
type ids struct{ allow, env, pr, ask string }

func newIDs() ids {
	b := make([]byte, 4)
	rand.Read(b)
	sfx := "_" + hex.EncodeToString(b)
	return ids{idAllow + sfx, idEnv + sfx, idPR + sfx, idAsk + sfx}
}

// Result is how the demo went.
type Result struct {
	RunExit    int
	Calls      []api.Call
	AsExpected bool
}

// Run runs the demo.
func Run(ctx context.Context, cfg Config) (Result, error) {
	scratch, err := os.MkdirTemp("", "toolgate-demo-")
	if err != nil {
		return Result{}, err
	}
	if cfg.Keep {
		fmt.Fprintf(cfg.Stderr, "toolgate demo: the scratch project stays in %s\n", scratch)
	} else {
		defer os.RemoveAll(scratch)
	}
	project, home := filepath.Join(scratch, "project"), filepath.Join(scratch, "home")
	for path, content := range map[string]string{
		filepath.Join(project, "README.md"):   "# A scratch project for toolgate demo\n",
		filepath.Join(project, ".env"):        "DEMO_API_KEY=this-secret-must-never-reach-the-model\n",
		filepath.Join(scratch, "policy.json"): string(demoPolicy),
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return Result{}, err
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return Result{}, err
		}
	}
	os.MkdirAll(home, 0o700)
	run := newIDs()
	model, err := modelscript.Start(script(project, run))
	if err != nil {
		return Result{}, err
	}
	defer model.Close()

	report := filepath.Join(scratch, "report.json")
	mcpConfig, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"demo": map[string]any{
		"type": "stdio", "command": cfg.Self, "args": []string{"demo-mcp"}}}})
	cmd := exec.CommandContext(ctx, cfg.Self, "run", "--policy", filepath.Join(scratch, "policy.json"), "--report", report,
		"--", cfg.Claude, "-p", "--mcp-config", string(mcpConfig), "--", "Show me what toolgate does.")
	cmd.Dir = project
	cmd.Env = demoEnv(cfg, model.URL, home)
	cmd.Stdout, cmd.Stderr = io.Discard, cfg.Stderr
	fmt.Fprintln(cfg.Stdout, "toolgate demo: running the real Claude Code CLI under toolgate run, on a scripted model (no API key)…")
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("start toolgate run: %w", err)
	}
	approverCtx, stopApprover := context.WithCancel(ctx)
	go approver(approverCtx, cfg, run.ask)
	err = cmd.Wait()
	stopApprover()
	res := Result{RunExit: cmd.ProcessState.ExitCode()}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return res, err
	}
	var rep supervisor.Report
	data, err := os.ReadFile(report)
	if err != nil {
		return res, fmt.Errorf("toolgate run wrote no report (exit %d)", res.RunExit)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		return res, err
	}
	res.Calls, err = client.NewClient(cfg.Paths.Socket()).SessionCalls(ctx, rep.SessionID)
	if err != nil {
		return res, fmt.Errorf("read the session's audit: %w", err)
	}
	res.AsExpected = explain(cfg.Stdout, rep, res, run)
	return res, nil
}

// script is what the scripted model proposes, turn by turn.
func script(project string, id ids) []modelscript.Step {
	return []modelscript.Step{
		{ToolUses: []modelscript.ToolUse{{ID: id.allow, Name: "Bash", Input: map[string]string{"command": "touch hello.txt", "description": "say hello"}}}},
		{ToolUses: []modelscript.ToolUse{{ID: id.env, Name: "Read", Input: map[string]string{"file_path": filepath.Join(project, ".env")}}}},
		{ToolUses: []modelscript.ToolUse{{ID: id.pr, Name: "mcp__demo__create_pull_request", Input: map[string]any{"base": 7, "title": "Add hello"}}}},
		{ToolUses: []modelscript.ToolUse{{ID: id.ask, Name: "Bash", Input: map[string]string{"command": "touch release.txt", "description": "release"}}}},
		{Text: "Done: one call ran, two were denied, one waited for a person."},
	}
}

// demoEnv is the environment of toolgate run: the user's, with a scratch
// HOME for claude, the scripted model, and the user's own toolgate paths
// (so that toolgate approve works from another terminal).
func demoEnv(cfg Config, modelURL, home string) []string {
	var env []string
	for _, kv := range cfg.Env {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "CLAUDE_") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "ANTHROPIC_BASE_URL="+modelURL, "ANTHROPIC_API_KEY=sk-toolgate-demo",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"TOOLGATE_RUNTIME_DIR="+cfg.Paths.RuntimeDir, "TOOLGATE_STATE_DIR="+cfg.Paths.StateDir)
}

// approver tells the person how to approve the demo's ask, and approves it
// itself after AutoApprove when asked to. It is not part of the session
// (it is the parent of toolgate run), so the daemon accepts its decision.
func approver(ctx context.Context, cfg Config, askID string) {
	gate := client.NewClient(cfg.Paths.ApproveSocket())
	client.Follow(ctx, gate, func(c client.Change) {
		for _, d := range c.Added {
			if d.Approval.ToolUseID != askID {
				continue
			}
			if cfg.AutoApprove <= 0 {
				fmt.Fprintf(cfg.Stdout, "toolgate demo: a rule asks a person. In another terminal: toolgate approve %s (or toolgate deny %s)\n", d.Approval.ID, d.Approval.ID)
				continue
			}
			fmt.Fprintf(cfg.Stdout, "toolgate demo: a rule asks a person; approve it in another terminal with toolgate approve %s, or the demo approves it itself in %s (--auto-approve)\n",
				d.Approval.ID, cfg.AutoApprove)
			go func(id string) {
				select {
				case <-ctx.Done():
					return
				case <-time.After(cfg.AutoApprove):
				}
				if _, err := gate.Decide(ctx, id, api.DecideRequest{Decision: "approve", Reason: "toolgate demo --auto-approve"}); err == nil {
					fmt.Fprintln(cfg.Stdout, "toolgate demo: approved it (--auto-approve).")
				}
			}(d.Approval.ID)
		}
	})
}
