package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/claudecode"
	"github.com/toolgate/toolgate/contain"
	"github.com/toolgate/toolgate/supervisor"
	"github.com/urfave/cli/v2"
)

func resumeCommand() *cli.Command {
	return &cli.Command{
		Name:  "resume",
		Usage: "run on the deferred sessions whose ask a person decided",
		Description: `toolgate run --on-ask defer ends a run at its first ask, with the approval
recorded for a person. resume takes up every such session whose approval has
been decided (approved, denied, or expired), once: claude -p --resume goes on
from where it stopped, in the session's directory, with its arguments (without
the prompt), under the same policy, and the deferred call gets the decision,
once. Each resumed run prints its summary line and ends like toolgate run. A
session another resume took up first is skipped; a session still waiting is
named on stderr, untouched. Safe to run from every cron tick. claude's output
passes through (on stderr with --json, whose document is stdout's alone).

--project DIR takes up only the sessions that ran in DIR or below it: a cron
job resumes its own sessions, not the ones a person deferred elsewhere.

The policy file must still have the sha256 the session started with:
--policy-changed resumes under the file as it is now.

EXAMPLES
   toolgate resume
   toolgate resume --report-dir ~/.local/state/toolgate/reports --json
   toolgate resume --project ~/src/project
   */10 * * * * toolgate resume; toolgate run --on-ask defer -- claude -p "$(cat task.md)"

EXIT STATUS
   0    nothing to resume, or every resumed run ended 0
   N    the exit code of the first resumed run that did not end 0 (as toolgate run's:
        75 expired, 77 denied, 81 deferred again ...)
   64   bad command line
   65   a session's policy file changed since it started (--policy-changed resumes anyway)
   69   the daemon cannot be reached or started
   78   a session's policy document is now invalid`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "project", Usage: "only the sessions that ran in `DIR` or below it"},
			&cli.BoolFlag{Name: "policy-changed", Usage: "resume under the policy file as it is now, even if it changed since the session started"},
			&cli.StringFlag{Name: "report-dir", Usage: "write each resumed run's JSON report to DIR/SESSION.json"},
			&cli.StringFlag{Name: "hook", Usage: "the toolgate-hook executable (default: beside toolgate)", EnvVars: []string{"TOOLGATE_HOOK"}},
			&cli.StringFlag{Name: "containment", Usage: "as toolgate run's", EnvVars: []string{"TOOLGATE_CONTAINMENT"}, Value: contain.Auto},
			&cli.StringSliceFlag{Name: "writable", Usage: "as toolgate run's", EnvVars: []string{"TOOLGATE_WRITABLE"}},
			&cli.StringFlag{Name: "network", Usage: "as toolgate run's", EnvVars: []string{"TOOLGATE_NETWORK"}, Value: "on"},
			&cli.BoolFlag{Name: "allow-other-hooks", Usage: "as toolgate run's"},
			jsonFlag(),
		},
		Action: resumeAction,
	}
}

// resumed is one line of resume --json.
type resumed struct {
	SessionID  string `json:"session_id"`
	ApprovalID string `json:"approval_id"`
	Status     string `json:"status"`              // the approval's
	Outcome    string `json:"outcome"`             // resumed, waiting, taken (by another resume), failed
	ExitCode   *int   `json:"exit_code,omitempty"` // the resumed run's
	Error      string `json:"error,omitempty"`
}

func resumeAction(cliCtx *cli.Context) error {
	ctx := cliCtx.Context
	live, err := ensureDaemon(ctx)
	if err != nil {
		return err
	}
	deferred, err := personClient(live.Socket()).Deferred(ctx)
	if err != nil {
		return approverError(err)
	}
	if dir := cliCtx.String("project"); dir != "" {
		if deferred, err = inProject(deferred, dir); err != nil {
			return err
		}
	}
	var out []resumed
	exit := 0
	for _, d := range deferred {
		if ctx.Err() != nil {
			break // stopped (Ctrl-C, SIGTERM): the sessions not taken up yet stay deferred
		}
		line := resumed{SessionID: d.Session.ID, ApprovalID: d.Approval.ID, Status: d.Approval.Status}
		if d.Approval.Status == api.StatusPending {
			line.Outcome = "waiting"
			out = append(out, line)
			fmt.Fprintf(cliCtx.App.ErrWriter, "toolgate: %s still waits for a person: toolgate approve %s (or deny)\n", d.Session.ID, d.Approval.ID)
			continue
		}
		fmt.Fprintf(cliCtx.App.ErrWriter, "toolgate: resuming %s: %s was %s\n", d.Session.ID, d.Approval.ID, d.Approval.Status)
		report, err := resumeOne(cliCtx, d)
		switch {
		case errors.Is(err, supervisor.ErrAlreadyResumed):
			line.Outcome = "taken"
		case err != nil:
			line.Outcome, line.Error = "failed", err.Error()
			fmt.Fprintf(cliCtx.App.ErrWriter, "toolgate: %s: %v\n", d.Session.ID, err)
			if exit == 0 {
				exit = exitCode(err, new(discard))
			}
		default:
			line.Outcome, line.ExitCode = "resumed", &report.ExitCode
			if exit == 0 {
				exit = report.ExitCode
			}
		}
		out = append(out, line)
	}
	if cliCtx.Bool("json") {
		if err := writeJSON(cliCtx.App.Writer, struct {
			SchemaVersion int       `json:"schema_version"`
			Sessions      []resumed `json:"sessions"`
		}{1, append([]resumed{}, out...)}); err != nil {
			return err
		}
	}
	if exit != 0 {
		return &exitStatus{exit}
	}
	return nil
}

// inProject keeps the sessions that ran in dir or below it. Both sides are
// compared with their symbolic links resolved, as a session records the
// directory claude ran in.
func inProject(deferred []api.DeferredSession, dir string) ([]api.DeferredSession, error) {
	root, err := filepath.Abs(dir)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return nil, usagef("--project %s: %v", dir, err)
	}
	var kept []api.DeferredSession
	for _, d := range deferred {
		cwd, err := filepath.EvalSymlinks(d.Session.Cwd)
		if err != nil {
			cwd = d.Session.Cwd // gone since: compare it as recorded
		}
		if _, ok := under(root, cwd); ok {
			kept = append(kept, d)
		}
	}
	return kept, nil
}

// resumeOne runs one deferred session on, as toolgate run would.
func resumeOne(cliCtx *cli.Context, d api.DeferredSession) (supervisor.Report, error) {
	if d.Session.ClaudeSessionID == "" {
		return supervisor.Report{}, errors.New("the session id Claude Code gave it was never recorded, so claude cannot resume it")
	}
	self, err := os.Executable()
	if err != nil {
		return supervisor.Report{}, err
	}
	hook, err := hookExecutable(cliCtx, self) // from here, not from the session's directory
	if err != nil {
		return supervisor.Report{}, err
	}
	writable, err := writableFlags(cliCtx)
	if err != nil {
		return supervisor.Report{}, err
	}
	home, _ := os.UserHomeDir()
	cfg := supervisor.RunConfig{
		Paths:           envPaths(""),
		PolicyPath:      d.PolicyName,
		ApprovalTimeout: time.Duration(d.ApprovalTimeout),
		OnAsk:           d.OnAsk,
		Containment:     cliCtx.String("containment"),
		Writable:        writable,
		NoNetwork:       cliCtx.String("network") == "none",
		ConfigDir:       configDir(),
		Claude:          cmp.Or(d.Claude, "claude"),
		ClaudeArgs:      claudecode.ResumeArgs(d.ClaudeArgs, d.Session.ClaudeSessionID),
		Hook:            hook,
		Self:            self,
		Version:         version,
		Env:             os.Environ(),
		Cwd:             d.Session.Cwd,
		Home:            home,
		Stdin:           nil, // the conversation goes on from Claude Code's record, not from stdin
		Stdout:          cliCtx.App.Writer,
		Stderr:          cliCtx.App.ErrWriter,
		Resume:          &d,
		PolicyChanged:   cliCtx.Bool("policy-changed"),
		AllowOtherHooks: cliCtx.Bool("allow-other-hooks"),
	}
	if cliCtx.Bool("json") {
		cfg.Stdout = cliCtx.App.ErrWriter // stdout is the JSON document alone
	}
	if dir := cliCtx.String("report-dir"); dir != "" {
		cfg.ReportPath = filepath.Join(dir, d.Session.ID+".json")
	}
	var changed *supervisor.PolicyChangedError
	report, err := supervisor.Run(cliCtx.Context, cfg)
	switch {
	case errors.As(err, &changed):
		return report, &dataError{changed}
	case errors.As(err, new(*supervisor.NotContainedError)):
		return report, notContained(err)
	case errors.As(err, new(*supervisor.UnavailableError)):
		return report, &gateUnavailable{err}
	}
	return report, err
}

// discard is an io.Writer that drops what it is given.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
