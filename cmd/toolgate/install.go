package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/claudecode"
	"github.com/toolgate/toolgate/contain"
	"github.com/toolgate/toolgate/hook"
	"github.com/toolgate/toolgate/install"
	"github.com/toolgate/toolgate/policy"
	"github.com/urfave/cli/v2"
)

func installCommand() *cli.Command {
	return &cli.Command{
		Name:  "install",
		Usage: "gate claude sessions started without toolgate run (interactive ones too)",
		Description: `Adds toolgate's hook to Claude Code's settings. Every claude session that reads
them is then gated and audited like a toolgate run session, under Claude Code's
own session id. --scope says which settings:

   user     ~/.claude/settings.json (or $CLAUDE_CONFIG_DIR): every session of yours
   project  .claude/settings.json in the current directory, which the team commits:
            the command is portable, naming toolgate-hook from PATH (or from the
            project, "$CLAUDE_PROJECT_DIR"/..., when it lives there) and the policy
            from the project; both must be so
   local    .claude/settings.local.json: this checkout only, not shared

Its asks go through Claude Code's PermissionRequest hook: the hook creates the
approval record and waits up to --approval-timeout for toolgate approve, watch
or notify. When nobody decides in time it answers nothing, so Claude Code's own
dialog decides (claude -p denies); the audit says handed_to_claude. A rule's
approval_timeout can shorten that wait, never lengthen it: Claude Code stops
the hook at the timeout install writes from --approval-timeout (default 5m), so
for rules that wait longer install with a longer --approval-timeout.

The sessions' boundary is toolgate's Bash boundary where the kernel allows it
(--containment auto, or boundary to insist): install sets CLAUDE_CODE_SHELL to
toolgate-bash in the file's env block, so every Bash command writes only in its
project (the nearest directory up from where it runs that holds .git), the temp
dir and /dev; in the project git's config and hooks, .claude and .mcp.json are
read-only; and it reaches no Unix socket. Claude Code's own file tools are not
inside it (the guard keeps their writes off what runs code later). Where the
boundary cannot run, auto falls back to Claude Code's own sandbox for Bash
(bubblewrap and socat; --containment sandbox asks for it): a "sandbox" block
that runs every Bash command sandboxed and keeps it from toolgate's files.
Without either it says so and installs the hooks alone; --containment off
leaves both out. A file whose env block names a shell of its own, or whose
settings configure the sandbox themselves, keeps its own.

The file is edited in place: everything else in it stays as it was, installing
twice changes nothing, and toolgate uninstall takes out exactly what install
put in. A settings file that is not valid JSON is refused, never rewritten.
Sessions keep the policy they started with; edit it and new sessions use it.

EXAMPLES
   toolgate install
   toolgate policy init --output .claude/toolgate-policy.json
   toolgate install --scope project --policy .claude/toolgate-policy.json
   toolgate install --scope local --approval-timeout 30m --json

EXIT STATUS
   0    installed (or already installed, unchanged)
   64   bad command line
   65   the settings file is not valid JSON: it was left untouched
   66   the policy file or the hook binary does not exist (project scope: or
        cannot be named portably: toolgate-hook off PATH, a policy outside)
   69   --containment boundary or sandbox, and it cannot run here
   78   the policy document is invalid, or the settings file's env block runs
        Bash with a shell of its own (CLAUDE_CODE_SHELL)`,
		Flags: []cli.Flag{
			scopeFlag(),
			&cli.StringFlag{Name: "policy", Usage: "the policy installed sessions are gated by", EnvVars: []string{policyEnv},
				Value: defaultPolicy(), DefaultText: "$XDG_CONFIG_HOME/toolgate/policy.json"},
			&cli.DurationFlag{Name: "approval-timeout", Usage: "how long an ask waits for toolgate's approvers before Claude Code's own dialog decides",
				Value: api.DefaultInstalledApprovalTimeout},
			&cli.StringFlag{Name: "hook", Usage: "the toolgate-hook executable (default: beside toolgate)", EnvVars: []string{"TOOLGATE_HOOK"}},
			&cli.StringFlag{Name: "containment", Usage: "auto (toolgate's Bash boundary where the kernel allows it, else Claude Code's sandbox where bubblewrap and socat are installed), boundary or sandbox (or refuse), or off",
				Value: contain.InstallAuto},
			jsonFlag(),
		},
		Action: func(cliCtx *cli.Context) error {
			path, project, err := settingsPath(cliCtx.String("scope"))
			if err != nil {
				return err
			}
			opts, err := installOptions(cliCtx, project)
			if err != nil {
				return err
			}
			changed, err := install.InstallFile(path, opts)
			if err != nil {
				return settingsError(err)
			}
			if doc, _ := os.ReadFile(path); opts.Sandbox != nil {
				if sb := gjson.GetBytes(doc, "sandbox"); !install.IsToolgateSandbox(sb) {
					fmt.Fprintf(cliCtx.App.ErrWriter, "toolgate: %s configures Claude Code's sandbox itself: left as it is. "+
						"For the boundary toolgate needs, set in it: %s\n", path, opts.Sandbox)
				}
			}
			return installReport(cliCtx, path, changed, opts.Command())
		},
	}
}

func uninstallCommand() *cli.Command {
	return &cli.Command{
		Name:  "uninstall",
		Usage: "take toolgate's hook out of Claude Code's settings",
		Description: `Removes every toolgate-hook entry from the user's, the project's or the local
(--scope local) Claude Code settings, and the hook events and "hooks" object that held only them,
and the "sandbox" block install added (one the user changed since is theirs, and stays); the rest
of the file stays as it was, byte for byte. A settings file toolgate created is
removed once it holds nothing. Running sessions keep their hooks until they end.

EXAMPLES
   toolgate uninstall
   toolgate uninstall --scope project
   toolgate uninstall --scope local

EXIT STATUS
   0    removed (or nothing to remove)
   64   bad command line
   65   the settings file is not valid JSON: it was left untouched`,
		Flags: []cli.Flag{scopeFlag(), jsonFlag()},
		Action: func(cliCtx *cli.Context) error {
			path, _, err := settingsPath(cliCtx.String("scope"))
			if err != nil {
				return err
			}
			changed, err := install.UninstallFile(path)
			if err != nil {
				return settingsError(err)
			}
			return installReport(cliCtx, path, changed, "")
		},
	}
}

func scopeFlag() cli.Flag {
	return &cli.StringFlag{Name: "scope", Usage: "user (~/.claude/settings.json), project (./.claude/settings.json, shared) or local (./.claude/settings.local.json)", Value: "user"}
}

// settingsPath is the settings file of a scope, and the project directory.
func settingsPath(scope string) (path, project string, err error) {
	project, err = os.Getwd()
	if err != nil {
		return "", "", err
	}
	switch scope {
	case "user":
		home, err := os.UserHomeDir()
		if err != nil {
			return "", "", err
		}
		return install.UserSettings(os.Getenv, home), project, nil
	case "project":
		return install.ProjectSettings(project), project, nil
	case "local":
		return install.LocalSettings(project), project, nil
	}
	return "", "", usagef("--scope must be user, project or local, not %q", scope)
}

// installOptions checks the policy and the hook and says how the hook's
// command names them: a policy inside the project (project scope) by its
// path from the project, so that the settings file can be shared.
func installOptions(cliCtx *cli.Context, project string) (install.Options, error) {
	timeout := cliCtx.Duration("approval-timeout")
	if timeout < time.Second {
		return install.Options{}, usagef("--approval-timeout must be at least 1s, not %s", timeout)
	}
	policyPath, err := filepath.Abs(cliCtx.String("policy"))
	if err != nil {
		return install.Options{}, err
	}
	if _, err := policy.Load(policyPath); err != nil {
		if policy.IsInvalid(err) {
			return install.Options{}, err
		}
		return install.Options{}, fmt.Errorf("%w\nTry: write a policy there (see examples/policies), or pass --policy FILE", err)
	}
	hookPath := cliCtx.String("hook")
	if hookPath == "" {
		self, err := os.Executable()
		if err != nil {
			return install.Options{}, err
		}
		hookPath = filepath.Join(filepath.Dir(self), install.HookName)
	}
	if hookPath, err = filepath.Abs(hookPath); err != nil {
		return install.Options{}, err
	}
	if _, err := os.Stat(hookPath); err != nil {
		return install.Options{}, fmt.Errorf("the hook binary is missing: %w\nTry: go build -o bin/ ./cmd/... and run bin/toolgate install, or pass --hook", err)
	}
	shell, absShell := contain.ShellPath(hookPath), contain.ShellPath(hookPath)
	if cliCtx.String("scope") == "project" {
		if hookPath, policyPath, err = portable(project, hookPath, policyPath); err != nil {
			return install.Options{}, err
		}
	}
	o := install.Options{Hook: hookPath, Policy: policyPath, ApprovalTimeout: timeout, PermissionMargin: hook.PermissionMargin}
	level, err := contain.ForInstall(cliCtx.String("containment"), shell)
	if err != nil {
		return install.Options{}, &gateUnavailable{err}
	}
	switch {
	case level.Bounded():
		// A shared file names it as the hook: from PATH.
		if cliCtx.String("scope") == "project" {
			if shell, err = portableShell(shell); err != nil {
				return install.Options{}, err
			}
		}
		// toolgate's own files, where they lie in the temp dir the
		// commands may write (the runtime dir without XDG_RUNTIME_DIR,
		// XDG_STATE_HOME there): read-only. Elsewhere they are not
		// writable at all; on another machine a path that is not there is
		// passed over.
		o.Shell = shell
		o.Boundary = contain.InstalledBoundary + readOnlyInTmp(boundaryProtected(absShell, policyPath))
	case level.Sandboxed():
		o.Sandbox = claudecode.SandboxSettings(installProtected(hookPath, policyPath))
	default:
		fmt.Fprintf(cliCtx.App.ErrWriter, "toolgate: WARNING: installed sessions run uncontained: %s\n", level.Detail)
	}
	return o, nil
}

// readOnlyInTmp is the boundary's read-only entries for those of paths
// inside the system's temp dir.
func readOnlyInTmp(paths []string) string {
	var b strings.Builder
	tmp := filepath.Clean(os.TempDir())
	for _, p := range paths {
		if p = filepath.Clean(p); strings.HasPrefix(p, tmp+"/") || strings.HasPrefix(p, "/tmp/") {
			fmt.Fprintf(&b, "r %s\n", p)
		}
	}
	return b.String()
}

// portableShell names toolgate-bash for a shared settings file: by name,
// found on PATH, which must hold this one.
func portableShell(shell string) (string, error) {
	onPath, err := exec.LookPath(contain.ShellName)
	if err != nil {
		return "", fmt.Errorf("%s is not on your PATH, so the settings the team shares cannot name it (%s is this machine's): %w\n"+
			"Try: cp %s ~/.local/bin/ beside toolgate-hook, or --scope local for this checkout only, or --containment sandbox",
			contain.ShellName, shell, fs.ErrNotExist, shell)
	}
	if same, _ := sameFile(onPath, shell); !same {
		fmt.Fprintf(os.Stderr, "toolgate: the settings name %s from PATH: here that is %s, not %s\n", contain.ShellName, onPath, shell)
	}
	return contain.ShellName, nil
}

// installProtected is what Claude Code's sandbox must keep the model's
// commands from writing, beyond what it protects itself (everything outside
// the project, and Claude Code's own settings files in it): for a project
// in which toolgate's files lie, and for a sandbox with allowWrite paths.
func installProtected(hookPath, policyPath string) []string {
	p := livePaths()
	out := []string{p.RuntimeDir, p.StateDir, p.LedgerDir(), configDir(), hookPath, policyPath}
	if self, err := os.Executable(); err == nil {
		out = append(out, self)
	}
	if home, err := os.UserHomeDir(); err == nil {
		out = append(out, filepath.Dir(install.UserSettings(os.Getenv, home)))
	}
	return out
}

// boundaryProtected is what the Bash boundary of installed sessions keeps
// read-only where it lies in the temp dir: toolgate's own files, and
// Claude Code's settings files (not its whole directory: the shell
// snapshot is written there).
func boundaryProtected(shell, policyPath string) []string {
	p := livePaths()
	out := []string{p.RuntimeDir, p.StateDir, configDir(), shell, policyPath}
	if self, err := os.Executable(); err == nil {
		out = append(out, self, filepath.Join(filepath.Dir(self), install.HookName))
	}
	if home, err := os.UserHomeDir(); err == nil {
		claudeDir := filepath.Dir(install.UserSettings(os.Getenv, home))
		out = append(out, filepath.Join(claudeDir, "settings.json"), filepath.Join(claudeDir, "settings.local.json"),
			filepath.Join(home, ".claude.json"))
	}
	return out
}

// portable names the hook and the policy as a settings file the team
// shares must: every path on this machine is someone else's nowhere. The
// policy must be in the project; the hook in the project, or on PATH.
func portable(project, hookPath, policyPath string) (hookName, policyName string, err error) {
	policyName, ok := under(project, policyPath)
	if !ok {
		return "", "", fmt.Errorf("the policy %s is outside the project, so the settings the team shares cannot name it: %w\n"+
			"Try: toolgate policy init --output .claude/toolgate-policy.json, then --policy .claude/toolgate-policy.json; or --scope local", policyPath, fs.ErrNotExist)
	}
	if rel, ok := under(project, hookPath); ok {
		return rel, policyName, nil
	}
	onPath, err := exec.LookPath(install.HookName)
	if err != nil {
		return "", "", fmt.Errorf("%s is not on your PATH and not in the project, so the settings the team shares cannot name it (%s is this machine's): %w\n"+
			"Try: put it on PATH with toolgate beside it (cp %s %s ~/.local/bin/), or --scope local for this checkout only",
			install.HookName, hookPath, fs.ErrNotExist, hookPath, filepath.Join(filepath.Dir(hookPath), "toolgate"))
	}
	if same, _ := sameFile(onPath, hookPath); !same {
		fmt.Fprintf(os.Stderr, "toolgate: the settings name %s from PATH: here that is %s, not %s\n", install.HookName, onPath, hookPath)
	}
	return install.HookName, policyName, nil
}

// under is path relative to dir, when it is inside it.
func under(dir, path string) (string, bool) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}

func sameFile(a, b string) (bool, error) {
	ia, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	ib, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(ia, ib), nil
}

func settingsError(err error) error {
	if errors.Is(err, install.ErrOtherShell) {
		return &configError{err}
	}
	var invalid *install.InvalidError
	if errors.As(err, &invalid) {
		return &dataError{fmt.Errorf("%w; it was left untouched\nTry: fix the file (Claude Code ignores a broken one too), then run this again", err)}
	}
	return err
}

// installReport prints nothing unless --json asks for it: quiet on success.
func installReport(cliCtx *cli.Context, path string, changed bool, command string) error {
	if !cliCtx.Bool("json") {
		return nil
	}
	type report struct {
		SchemaVersion int      `json:"schema_version"`
		Settings      string   `json:"settings"`
		Changed       bool     `json:"changed"`
		Command       string   `json:"command,omitempty"`
		Events        []string `json:"events,omitempty"`
	}
	r := report{SchemaVersion: 1, Settings: path, Changed: changed, Command: command}
	if command != "" {
		r.Events = install.Events
	}
	return writeJSON(cliCtx.App.Writer, r)
}
