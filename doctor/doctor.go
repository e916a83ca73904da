// Package doctor checks a toolgate installation and says, for each
// problem, how to fix it: the claude executable and its version, the
// daemon and its sockets, the ledger, the timeouts, the containment this
// machine gives sessions, the hooks installed in Claude Code's settings,
// and the desktop notification bus.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/internal/proc"
	"github.com/toolgate/toolgate/paths"

	"github.com/godbus/dbus/v5"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/contain"
	"github.com/toolgate/toolgate/install"
	"github.com/toolgate/toolgate/notify"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/supervisor"
)

// Status of a check.
const (
	OK   = "ok"
	Warn = "warn"
	Fail = "fail"
)

// Check is one thing checked.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Config says what to check.
type Config struct {
	Paths        paths.Paths
	Policy       string   // the default policy: $XDG_CONFIG_HOME/toolgate/policy.json or TOOLGATE_POLICY
	Claude       string   // the claude executable as configured ("claude" on PATH by default)
	Tested       []string // the Claude Code versions the end-to-end suite passed on
	Cwd, Home    string
	UserSettings string // Claude Code's user settings file
	DBusAddress  string // DBUS_SESSION_BUS_ADDRESS
	ApprovalWait time.Duration
	Shell        string // toolgate-bash, the boundary of each Bash command
}

// Run runs every check.
func Run(ctx context.Context, cfg Config) []Check {
	return []Check{
		checkClaude(ctx, cfg),
		checkDaemon(ctx, cfg),
		checkSockets(cfg),
		checkLedger(cfg),
		checkPolicy(cfg),
		checkTimeouts(cfg),
		checkContainment(cfg.Shell),
		checkSettings(cfg, "user", cfg.UserSettings),
		checkSettings(cfg, "project", install.ProjectSettings(cfg.Cwd)),
		checkSettings(cfg, "local", install.LocalSettings(cfg.Cwd)),
		checkNotify(ctx, cfg),
	}
}

var versionRe = regexp.MustCompile(`\b(\d+\.\d+\.\d+)\b`)

func checkClaude(ctx context.Context, cfg Config) Check {
	c := Check{Name: "claude"}
	path, err := exec.LookPath(cfg.Claude)
	if err != nil {
		c.Status, c.Detail = Fail, fmt.Sprintf("%q not found", cfg.Claude)
		c.Fix = "npm install -g @anthropic-ai/claude-code, or set TOOLGATE_CLAUDE (toolgate demo installs the tested version)"
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	version := versionRe.FindString(string(out))
	if err != nil || version == "" {
		c.Status, c.Detail, c.Fix = Warn, path+": its version could not be read", "run "+path+" --version to see why"
		return c
	}
	for _, v := range cfg.Tested {
		if v == version {
			c.Status, c.Detail = OK, fmt.Sprintf("%s, version %s (tested)", path, version)
			return c
		}
	}
	c.Status = Warn
	c.Detail = fmt.Sprintf("%s, version %s: not among the versions toolgate was tested on (%s)", path, version, strings.Join(cfg.Tested, ", "))
	c.Fix = "run the end-to-end suite against it: TOOLGATE_CLAUDE_VERSION=" + version + " ./scripts/test"
	return c
}

func checkDaemon(ctx context.Context, cfg Config) Check {
	c := Check{Name: "daemon"}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	st, err := client.NewClient(cfg.Paths.Socket()).Status(ctx)
	rec, recErr := cfg.Paths.ReadDaemonRecord()
	switch {
	case err == nil:
		c.Status, c.Detail = OK, fmt.Sprintf("pid %d, protocol %d, %d active sessions, ledger %s, sockets in %s", st.PID, st.Protocol, st.Sessions, st.Ledger, cfg.Paths.RuntimeDir)
	case recErr != nil && !errors.Is(recErr, fs.ErrNotExist):
		c.Status, c.Detail = Fail, "the daemon record beside the ledger cannot be trusted: "+recErr.Error()
		c.Fix = "stop every toolgate daemon, remove " + cfg.Paths.DaemonRecordFile() + " and let toolgate write it again"
	case recErr == nil && rec.RuntimeDir != cfg.Paths.RuntimeDir && proc.Alive(rec.PID):
		c.Status = Fail
		c.Detail = fmt.Sprintf("the daemon pid %d serves the ledger with its sockets in %s, which cannot be trusted: %v", rec.PID, rec.RuntimeDir, paths.CheckRuntimeDir(rec.RuntimeDir))
		c.Fix = fmt.Sprintf("stop it (kill %d) and let toolgate start a daemon again", rec.PID)
	case client.IsUnavailable(err) && !client.Alive(cfg.Paths):
		c.Status, c.Detail = OK, "not running (toolgate run starts it on demand)"
	default:
		c.Status, c.Detail = Fail, err.Error()
		c.Fix = "look at " + cfg.Paths.LogFile() + "; stop the stuck daemon and let toolgate run start a new one"
	}
	return c
}

func checkSockets(cfg Config) Check {
	c := Check{Name: "sockets", Status: OK}
	info, err := os.Stat(cfg.Paths.RuntimeDir)
	if err != nil {
		c.Detail = cfg.Paths.RuntimeDir + " does not exist yet (created on first use)"
		return c
	}
	var problems []string
	if info.Mode().Perm() != 0o700 {
		problems = append(problems, fmt.Sprintf("%s is %v, want 0700", cfg.Paths.RuntimeDir, info.Mode().Perm()))
	}
	for _, sock := range []string{cfg.Paths.Socket(), cfg.Paths.ApproveSocket()} {
		info, err := os.Lstat(sock)
		switch {
		case err != nil:
		case info.Mode().Type() != fs.ModeSocket:
			problems = append(problems, sock+" is not a socket")
		case info.Mode().Perm() != 0o600:
			problems = append(problems, fmt.Sprintf("%s is %v, want 0600", sock, info.Mode().Perm()))
		}
	}
	if len(problems) > 0 {
		c.Status, c.Detail = Fail, strings.Join(problems, "; ")
		c.Fix = "stop the daemon, remove " + cfg.Paths.RuntimeDir + " and let toolgate recreate it"
		return c
	}
	c.Detail = cfg.Paths.RuntimeDir + " 0700, sockets 0600"
	return c
}

func checkLedger(cfg Config) Check {
	c := Check{Name: "ledger"}
	dir := cfg.Paths.LedgerDir()
	var size int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if info, err := d.Info(); err == nil {
			size += allocated(info) // Badger's files are sparse: count what is on disk
		}
		return nil
	})
	switch {
	case os.IsNotExist(err):
		c.Status, c.Detail = OK, dir+" does not exist yet (created on first use)"
	case err != nil:
		c.Status, c.Detail, c.Fix = Fail, err.Error(), "check the permissions of "+dir
	default:
		c.Status, c.Detail = OK, fmt.Sprintf("%s, %.1f MB on disk; toolgate audit verify checks its chain", dir, float64(size)/(1<<20))
	}
	return c
}

// checkPolicy loads the default policy, which toolgate run uses when it is
// given none.
func checkPolicy(cfg Config) Check {
	c := Check{Name: "policy"}
	p, err := policy.Load(cfg.Policy)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.Status, c.Detail = Warn, cfg.Policy+" does not exist: toolgate run needs --policy FILE until it does"
		c.Fix = "toolgate policy init (a laptop's starter policy; --profile ci for unattended runs)"
	case policy.IsInvalid(err):
		c.Status, c.Detail = Fail, "the default policy is invalid (toolgate run refuses it, exit 78): "+err.Error()
		c.Fix = "toolgate policy check " + cfg.Policy + " lists every error"
	case err != nil:
		c.Status, c.Detail, c.Fix = Fail, err.Error(), "check the permissions of "+cfg.Policy
	default:
		c.Status = OK
		c.Detail = fmt.Sprintf("%s: version %d, %d rules, default %s, sha256 %.12s", cfg.Policy, p.Version, len(p.Rules()), p.Document().Default, p.SHA256)
	}
	return c
}

func allocated(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}

// checkContainment says what boundary sessions get on this machine:
// toolgate run's Landlock domain and the Bash boundary (tried once in a
// throwaway project, with the shell sessions would use), and the
// Bash sandbox of Claude Code that toolgate install configures.
func checkContainment(shell string) Check {
	c := Check{Name: "containment", Status: OK}
	var run contain.Level
	if dir, err := os.MkdirTemp("", "toolgate-doctor-"); err == nil {
		if sh, err := contain.SessionShell(shell, dir); err == nil {
			run, _ = contain.ForRun(contain.Auto, sh, contain.Boundary{Writable: append([]string{dir}, contain.Devices...), Projects: []string{dir}})
		}
		os.RemoveAll(dir)
	}
	installed, _ := contain.ForInstall(contain.InstallAuto, shell)
	c.Detail = fmt.Sprintf("toolgate run: %s (%s); installed sessions: %s (%s)", run.Name, run.Detail, installed.Name, installed.Detail)
	var fixes []string
	switch {
	case !run.Contained():
		c.Status = Warn
		fixes = append(fixes, "toolgate run needs Linux 6.12 or later with Landlock enabled (lsm=landlock) to contain claude")
	case !run.Bounded():
		c.Status = Warn
		fixes = append(fixes, "the Bash boundary needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0) and "+
			contain.ShellName+" beside toolgate-hook")
	}
	if missing := contain.SandboxMissing(); len(missing) > 0 {
		c.Status = Warn
		fixes = append(fixes, "apt-get install "+strings.Join(missing, " ")+", then toolgate install again, for installed sessions where the Bash boundary cannot run")
	}
	c.Fix = strings.Join(fixes, "; ")
	return c
}

// checkTimeouts says how long an ask may wait and how long Claude Code
// waits for the answer to one of toolgate run's asks (its http hook, or
// the prompt tool of --hook-transport command): the longer must be Claude
// Code's,
// or a person could approve a call Claude Code no longer waits for. A rule
// of the default policy may ask for longer than the default wait.
func checkTimeouts(cfg Config) Check {
	longest := time.Duration(0)
	where := ""
	if p, err := policy.Load(cfg.Policy); err == nil && p.LongestApprovalTimeout() > 0 {
		longest = p.LongestApprovalTimeout()
		where = fmt.Sprintf(", and a rule of %s asks for %s", cfg.Policy, longest)
	}
	wait := max(cfg.ApprovalWait, longest)
	answer := supervisor.AskTimeout(cfg.ApprovalWait, longest)
	c := Check{Name: "timeouts", Status: OK, Detail: fmt.Sprintf(
		"approvals wait %s by default%s; toolgate run has Claude Code wait %s for an ask's answer, past the longest wait (%s), so the gate's expiry always answers first",
		cfg.ApprovalWait, where, answer, wait)}
	if answer <= wait {
		c.Status, c.Fix = Fail, "report this: Claude Code would stop waiting for toolgate run's answer before an ask's expiry"
	}
	return c
}

func checkSettings(cfg Config, scope, path string) Check {
	c := Check{Name: scope + " settings", Status: OK}
	entries, err := install.FindFile(path)
	switch {
	case err != nil:
		c.Status, c.Detail = Warn, err.Error()
		c.Fix = "fix the file: Claude Code ignores a settings file it cannot read, toolgate's hook with it"
		return c
	case len(entries) == 0 && otherPreToolUse(path):
		c.Status = Warn
		c.Detail = path + ": other PreToolUse hooks run beside toolgate's"
		c.Fix = "toolgate always answers explicitly, so another hook cannot loosen its decision; but run with --setting-sources user to keep project hooks out entirely"
		return c
	case len(entries) == 0:
		c.Detail = path + ": toolgate's hook is not installed (toolgate install adds it)"
		return c
	}
	if problem, fix := checkInstalled(cfg, entries); problem != "" {
		c.Status, c.Detail, c.Fix = Fail, path+": "+problem, fix
		return c
	}
	c.Detail = fmt.Sprintf("%s: toolgate's hook is installed (%d events): %s", path, len(entries), entries[0].Command)
	return c
}

// checkInstalled checks toolgate's entries: every event is there, and the
// hook and the policy the command names exist and load.
func checkInstalled(cfg Config, entries []install.Entry) (problem, fix string) {
	have := map[string]bool{}
	for _, e := range entries {
		have[e.Event] = true
	}
	for _, event := range install.Events {
		if !have[event] {
			return "toolgate's hook is missing for " + event, "run toolgate install again"
		}
	}
	program, args, err := install.Parse(entries[0].Command, cfg.Cwd) // Claude Code passes the project as $CLAUDE_PROJECT_DIR
	if err != nil {
		return "the hook's command cannot be read", "run toolgate uninstall, then toolgate install"
	}
	if !strings.Contains(program, "/") {
		// A project's shared settings name the hook from PATH.
		if _, err := exec.LookPath(program); err != nil {
			return program + " is not on PATH, so Claude Code cannot run the hook and goes on without toolgate: " + err.Error(),
				"put toolgate-hook and toolgate on PATH (cp bin/toolgate-hook bin/toolgate ~/.local/bin/)"
		}
	} else if _, err := os.Stat(program); err != nil {
		return "the hook binary is missing: " + err.Error(), "build it (go build -o bin/ ./cmd/...) and run bin/toolgate install again"
	}
	for i, w := range args {
		if w != "--policy" || i+1 == len(args) {
			continue
		}
		if _, err := policy.Load(args[i+1]); err != nil {
			return "the installed policy does not load (every call of those sessions is denied gate_unavailable): " + err.Error(),
				"fix the policy (toolgate policy check " + args[i+1] + "), or run toolgate install --policy FILE"
		}
	}
	return "", ""
}

func otherPreToolUse(path string) bool {
	data, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(data), `"`+api.PreToolUse+`"`)
}

func checkNotify(ctx context.Context, cfg Config) Check {
	c := Check{Name: "notifications"}
	if cfg.DBusAddress == "" {
		c.Status, c.Detail = Warn, "no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is unset): desktop notifications cannot be shown"
		c.Fix = "approve from a terminal (toolgate pending / approve / watch), or run in a desktop session"
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	bus, err := dbus.Connect(cfg.DBusAddress, dbus.WithContext(ctx))
	if err != nil {
		c.Status, c.Detail = Warn, "the D-Bus session bus at "+cfg.DBusAddress+" cannot be reached: "+err.Error()
		c.Fix = "approve from a terminal (toolgate watch), or run toolgate notify in your desktop session"
		return c
	}
	defer bus.Close()
	svc, err := notify.Probe(ctx, bus)
	switch {
	case err != nil:
		c.Status, c.Detail = Warn, err.Error()
		c.Fix = "start a notification daemon (a desktop does; or dunst, mako), or approve from a terminal (toolgate watch)"
	case !svc.Actions:
		c.Status = Warn
		c.Detail = fmt.Sprintf("%s %s shows notifications without buttons: they say how to approve instead", svc.Name, svc.Version)
		c.Fix = "use a notification daemon with actions (most desktops'; dunst with a context menu), or approve with toolgate watch"
	default:
		c.Status, c.Detail = OK, fmt.Sprintf("%s %s on the session bus, with Approve/Deny buttons (toolgate notify)", svc.Name, svc.Version)
	}
	return c
}
