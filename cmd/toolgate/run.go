package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/claudecode"
	"github.com/toolgate/toolgate/contain"
	"github.com/toolgate/toolgate/supervisor"
	"github.com/urfave/cli/v2"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run claude with every tool call gated",
		ArgsUsage: "-- claude [claude arguments]",
		Description: `Validates the policy, makes sure the daemon runs (starting it when needed),
registers a session, and runs claude with toolgate's hook and permission-prompt
tool added to your arguments. claude's output passes through untouched. At the
end it prints a one-line summary on stderr, writes the JSON report (--report)
and exits with a code a script can branch on.

The first word after -- is the claude executable; without it, --claude (or
TOOLGATE_CLAUDE, or claude on PATH) is used. The -- may be left out: from the
first word that is not one of run's flags on, the words are claude's command
line (toolgate run claude -p "x" is toolgate run -- claude -p "x").

claude runs contained (--containment auto, the default): inside a Landlock
domain, so that nothing the model runs, detached or not, can signal the daemon,
this process or an approver, or approve a call (its processes carry
no_new_privs, which the daemon refuses as approvers). And every Bash command
runs in toolgate's boundary (toolgate-bash.so): it writes only in the project, the
session's own temp dir ($TMPDIR) and the trees you name with --writable (Go's
and npm's caches, say); in the project, .git (pinned in place), git's config
and hooks, .claude and .mcp.json are read-only, for claude's own file tools
too; it has no Unix sockets (the gate, an approver, the desktop bus and tmux
listen on one). The network stays on; --network none, or --containment
strict, cuts it. Where the kernel cannot give a layer (Landlock ABI 6, Linux
6.12; unprivileged user namespaces) auto says at start what is not protected;
strict refuses to start. run also checks, for the whole session, that the
daemon answering is the one it trusts: a daemon replaced or gone makes every
call deny gate_unavailable, stops claude, and exits 69.

Each call reaches the gate through Claude Code's PreToolUse hook. With
--hook-transport http it is an http hook to run's own loopback listener,
behind a random token: run answers every hook request with a verdict, denying
gate_unavailable itself when the daemon does not answer within 10 s, holds an
ask's request until a person decides or the approval expires, and reads which
calls ran and what the model saw from claude's transcript; a call that ran
without reaching the gate stops the session (exit 69). --hook-transport
command spawns toolgate-hook for every event instead, as installed sessions do
(slower: Claude Code starts a process for each of four events a call), and
an ask goes to run's permission-prompt MCP tool. auto, the default, is http, except
where Claude Code's sandbox is on (a settings file that enables it): the sandbox sends http hooks through its proxy, which refuses
them, so there it is command, and http is refused. The same with a Claude Code
older than 2.1.332, whose transcript does not say which calls ran.

--on-ask says what an ask does: wait for a person (up to --approval-timeout),
deny it at once (no_approver), or defer it: the approval is recorded and shown
to approvers as any ask, and the run ends at once with exit 81, the approval's
id in the summary and the report. Once a person decided, toolgate resume runs
claude on from where it stopped (claude -p only). A session defers one call;
another ask in the same message is denied deferred_sibling.

Before claude starts, run lists the tools of the MCP servers the session will
use (--mcp-config, the project's .mcp.json), to check their input against each
tool's schema. Each server may take --mcp-timeout; one that takes more than a
second says so on stderr, and one that does not answer in time is reported and
its tools are not schema-checked. What a server listed is kept for --mcp-cache
by its configuration (its command, arguments, variables, URL and executable),
beside the ledger, so a cron job does not start each server once more per run.

EXAMPLES
   toolgate run --policy policy.json -- claude -p "fix the failing test"
   toolgate run --report run.json --approval-timeout 10m -- claude -p --output-format json "tidy up"
   toolgate run --on-ask deny -- claude -p "nightly cleanup"   # unattended: asks are denied no_approver
   toolgate run --writable "$(go env GOCACHE)" -- claude -p "fix the test"   # Bash may write Go's build cache too
   toolgate run --containment strict -- claude -p "refactor"    # and no network for Bash
   toolgate run --hook-transport command -- claude -p "tidy up"   # the hook binary, as installed sessions
   toolgate run --on-ask defer --approval-timeout 12h -- claude -p "$(cat task.md)"   # cron: see toolgate resume

EXIT STATUS
   0    claude succeeded and no call was denied
   N    claude's own exit code, when it failed for its own reasons
   64   bad command line, or claude arguments that would bypass the gate
   66   the policy file does not exist or cannot be read; claude was not started
   69   the gate could not start (daemon, ledger, or the containment asked for), or
        claude is not found; claude was not started. Or the gate was lost during the
        session (its daemon replaced or gone): claude was stopped, the report says why
   73   the --report file cannot be created; claude was not started
   75   at least one approval expired (a timeout: retry later)
   77   at least one call was denied (policy, person, schema ...), none expired
   78   the policy document is invalid, or Claude Code's settings would take calls
        around the gate (disableAllHooks, another PreToolUse hook); claude was not started
   81   --on-ask defer: a call waits for a person, and the run ended; decide it
        (toolgate approve or deny), then toolgate resume goes on
   130  the run was stopped (SIGINT, SIGTERM, SIGHUP); an ask still waiting was
        withdrawn`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "policy", Usage: "the policy file", EnvVars: []string{policyEnv}, Value: defaultPolicy(), DefaultText: "$XDG_CONFIG_HOME/toolgate/policy.json"},
			&cli.StringFlag{Name: "report", Usage: "write the JSON report to `FILE`", EnvVars: []string{"TOOLGATE_REPORT"}},
			&cli.DurationFlag{Name: "approval-timeout", Usage: "how long an ask waits for a person", EnvVars: []string{"TOOLGATE_APPROVAL_TIMEOUT"}, Value: api.DefaultApprovalTimeout},
			&cli.StringFlag{Name: "on-ask", Usage: "wait (for a person), deny (unattended), or defer (end the run; toolgate resume goes on once a person decided)", EnvVars: []string{"TOOLGATE_ON_ASK"}, Value: api.OnAskWait},
			&cli.StringFlag{Name: "claude", Usage: "the claude executable", EnvVars: []string{"TOOLGATE_CLAUDE"}, Value: "claude"},
			&cli.StringFlag{Name: "hook", Usage: "the toolgate-hook executable (default: beside toolgate); a contained claude starts through it", EnvVars: []string{"TOOLGATE_HOOK"}},
			&cli.StringFlag{Name: "hook-transport", Usage: "auto (http, or command where Claude Code's sandbox is on or the CLI is older than 2.1.332), http (run's loopback listener) or command (toolgate-hook, spawned for each event)", EnvVars: []string{"TOOLGATE_HOOK_TRANSPORT"}, Value: supervisor.HookAuto},
			&cli.DurationFlag{Name: "mcp-timeout", Usage: "how long each MCP server may take to list its tools before claude starts", EnvVars: []string{"TOOLGATE_MCP_TIMEOUT"}, Value: supervisor.DefaultDiscoveryTimeout},
			&cli.DurationFlag{Name: "mcp-cache", Usage: "how long an MCP server's listed tools are kept, by its configuration (0: list them on every run)", EnvVars: []string{"TOOLGATE_MCP_CACHE"}, Value: 24 * time.Hour},
			&cli.BoolFlag{Name: "allow-other-hooks", Usage: "run even when Claude Code's settings have PreToolUse or PermissionRequest hooks of their own (one that allows may change the input that runs)"},
			&cli.StringFlag{Name: "containment", Usage: "auto (Landlock and the Bash boundary where the kernel has them, else what it has, said at start), strict (both, with no network for Bash, or refuse to start), landlock (the Landlock domain alone), or off", EnvVars: []string{"TOOLGATE_CONTAINMENT"}, Value: contain.Auto},
			&cli.StringSliceFlag{Name: "writable", Usage: "a `DIR` Bash commands may write in beside the project and the session's temp dir (repeat it, or give TOOLGATE_WRITABLE with commas)", EnvVars: []string{"TOOLGATE_WRITABLE"}},
			&cli.StringFlag{Name: "network", Usage: "on, or none: Bash commands get no socket at all", EnvVars: []string{"TOOLGATE_NETWORK"}, Value: "on"},
		},
		Action: func(cliCtx *cli.Context) error {
			cfg, err := newRunConfig(cliCtx)
			if err != nil {
				return err
			}
			report, err := supervisor.Run(cliCtx.Context, cfg)
			var argsErr *claudecode.ArgsError
			var settingsErr *supervisor.SettingsError
			switch {
			case errors.As(err, &argsErr):
				return &usageError{msg: argsErr.Msg}
			case errors.As(err, &settingsErr):
				return &configError{settingsErr}
			case errors.As(err, new(*supervisor.ReportError)):
				return &cantCreateError{fmt.Errorf("%w; claude was not started\nTry: --report FILE in a directory you can write", err)}
			case errors.As(err, new(*supervisor.NotContainedError)):
				return notContained(err)
			case errors.As(err, new(*supervisor.UnavailableError)):
				return &gateUnavailable{fmt.Errorf("%w\nTry: toolgate serve in another terminal to see why, or check %s", err, envPaths("").LogFile())}
			case err != nil:
				return err
			}
			if report.ExitCode != 0 {
				return &exitStatus{report.ExitCode}
			}
			return nil
		},
	}
}

func newRunConfig(cliCtx *cli.Context) (supervisor.RunConfig, error) {
	onAsk := cliCtx.String("on-ask")
	if onAsk != api.OnAskWait && onAsk != api.OnAskDeny && onAsk != api.OnAskDefer {
		return supervisor.RunConfig{}, usagef("--on-ask must be wait, deny or defer, not %q", onAsk)
	}
	if t := cliCtx.String("hook-transport"); t != supervisor.HookAuto && t != supervisor.HookHTTP && t != supervisor.HookCommand {
		return supervisor.RunConfig{}, usagef("--hook-transport must be auto, http or command, not %q", t)
	}
	args := cliCtx.Args().Slice()
	claude := cliCtx.String("claude")
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		claude, args = args[0], args[1:]
	}
	policyPath := cliCtx.String("policy")
	if policyPath == "" { // TOOLGATE_POLICY set but empty
		policyPath = defaultPolicy()
	}
	if _, err := os.Stat(policyPath); err != nil {
		named := cliCtx.IsSet("policy") && cliCtx.String("policy") != ""
		return supervisor.RunConfig{}, missingPolicy(policyPath, named, err)
	}
	// Absolute: toolgate resume reads it again, from anywhere.
	policyPath, err := filepath.Abs(policyPath)
	if err != nil {
		return supervisor.RunConfig{}, err
	}
	claudePath, err := exec.LookPath(claude)
	if err != nil {
		return supervisor.RunConfig{}, &gateUnavailable{fmt.Errorf("claude not found (%v)\nTry: --claude PATH or TOOLGATE_CLAUDE", err)}
	}
	self, err := os.Executable()
	if err != nil {
		return supervisor.RunConfig{}, err
	}
	hook, err := hookExecutable(cliCtx, self)
	if err != nil {
		return supervisor.RunConfig{}, err
	}
	if _, err := os.Stat(hook); err != nil {
		return supervisor.RunConfig{}, &gateUnavailable{fmt.Errorf("the hook binary is missing: %v\nTry: go build -o bin/ ./cmd/... and run bin/toolgate, or set --hook", err)}
	}
	cwd, err := os.Getwd()
	if err != nil {
		return supervisor.RunConfig{}, err
	}
	writable, err := writableFlags(cliCtx)
	if err != nil {
		return supervisor.RunConfig{}, err
	}
	home, _ := os.UserHomeDir()
	return supervisor.RunConfig{
		Paths:           envPaths(""),
		PolicyPath:      policyPath,
		ReportPath:      cliCtx.String("report"),
		ApprovalTimeout: cliCtx.Duration("approval-timeout"),
		OnAsk:           onAsk,
		Containment:     cliCtx.String("containment"),
		Writable:        writable,
		NoNetwork:       cliCtx.String("network") == "none",
		AllowOtherHooks: cliCtx.Bool("allow-other-hooks"),
		ConfigDir:       configDir(),
		MCPTimeout:      cliCtx.Duration("mcp-timeout"),
		MCPCacheTTL:     cliCtx.Duration("mcp-cache"),
		Claude:          claudePath,
		ClaudeArgs:      args,
		Hook:            hook,
		HookTransport:   cliCtx.String("hook-transport"),
		Self:            self,
		Version:         version,
		Env:             os.Environ(),
		Cwd:             cwd,
		Home:            home,
		Stdin:           cliCtx.App.Reader,
		Stdout:          cliCtx.App.Writer,
		Stderr:          cliCtx.App.ErrWriter,
	}, nil
}

// hookExecutable is the toolgate-hook executable run uses: --hook, or the one
// beside toolgate, absolute. run starts claude through it, and the guard
// protects it by that name: a relative one would be found in the
// project's directory (where the session's tools write) and named so that
// the guard never sees it.
func hookExecutable(cliCtx *cli.Context, self string) (string, error) {
	hook := cliCtx.String("hook")
	if hook == "" {
		hook = filepath.Join(filepath.Dir(self), "toolgate-hook")
	}
	return filepath.Abs(hook)
}

// writableFlags are --writable's directories, absolute, and --network
// checked.
func writableFlags(cliCtx *cli.Context) ([]string, error) {
	if n := cliCtx.String("network"); n != "on" && n != "none" {
		return nil, &usageError{msg: fmt.Sprintf("--network must be on or none, not %q", n)}
	}
	var dirs []string
	for _, d := range cliCtx.StringSlice("writable") {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, abs)
	}
	return dirs, nil
}

// notContained is a contained claude that did not start, with what to do.
func notContained(err error) error {
	try := "build toolgate and toolgate-hook together (go build -o bin/ ./cmd/...), or name this build's hook with --hook"
	if errors.Is(err, supervisor.ErrClaudeExec) {
		try = "run the claude executable by itself to see why it cannot start, or name another with --claude"
	}
	return &gateUnavailable{fmt.Errorf("%w\nTry: %s", err, try)}
}
