package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/claudecode"
	"github.com/toolgate/toolgate/contain"
	"github.com/toolgate/toolgate/hook"
	"github.com/toolgate/toolgate/install"
	"github.com/toolgate/toolgate/internal/clip"
	"github.com/toolgate/toolgate/paths"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Claude Code merges its settings from several layers, and some of what
// they say would take calls around toolgate run's hooks: disableAllHooks
// switches every hook off, run's own included, and another PreToolUse or
// PermissionRequest hook that allows may hand Claude Code another input
// to run (updatedInput) than the one toolgate decided. run checks the
// layers before claude starts; the guard keeps the session's tools from
// writing them, and Claude Code's sandbox keeps Bash from it.

// SettingsError is a settings layer that would take calls around the gate.
type SettingsError struct {
	File, Problem, Fix string
}

func (e *SettingsError) Error() string {
	return fmt.Sprintf("%s %s: claude was not started\nTry: %s", e.File, e.Problem, e.Fix)
}

// settingsLayers are the settings files a claude -p in cwd reads: the
// managed settings, the user's, the project's and the project's local
// ones, the latter also where Claude Code keeps them for a session in a
// subdirectory of a git repository (gitRoots).
func settingsLayers(claudeDir, cwd string) []string {
	files := []string{"/etc/claude-code/managed-settings.json"}
	if claudeDir != "" {
		files = append(files, filepath.Join(claudeDir, "settings.json"), filepath.Join(claudeDir, "settings.local.json"))
	}
	files = append(files, filepath.Join(cwd, ".claude", "settings.json"), filepath.Join(cwd, ".claude", "settings.local.json"))
	for _, root := range gitRoots(cwd) {
		files = append(files, filepath.Join(root, ".claude", "settings.local.json"))
	}
	return files
}

// gitRoots are the roots of the git repository cwd is in, other than cwd:
// Claude Code (2.1.332) reads a session's local settings at the
// repository's root (its "canonical" root) when it runs in a
// subdirectory. They are the nearest directory above cwd with a .git
// entry, and, when that entry is a file (a linked worktree), the main
// repository's root too. run checks them all: a layer more is no harm.
// Nothing here blocks (the model's code can make .git a FIFO).
func gitRoots(cwd string) []string {
	cwd = filepath.Clean(cwd)
	for dir := cwd; ; {
		if fi, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			var roots []string
			if dir != cwd {
				roots = append(roots, dir)
			}
			if fi.Mode().IsRegular() {
				if main := mainWorktree(dir); main != "" && main != dir && main != cwd {
					roots = append(roots, main)
				}
			}
			return roots
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

// mainWorktree is the main repository's root for the linked worktree at
// dir (its .git file says "gitdir: DIR", whose commondir names the main
// .git directory), or "".
func mainWorktree(dir string) string {
	data, err := paths.ReadRegular(filepath.Join(dir, ".git"), claudecode.MaxSettingsFile)
	line, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if err != nil || !ok {
		return ""
	}
	gitdir := strings.TrimSpace(line)
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(dir, gitdir)
	}
	common := gitdir
	if data, err := paths.ReadRegular(filepath.Join(gitdir, "commondir"), claudecode.MaxSettingsFile); err == nil {
		if c := strings.TrimSpace(string(data)); filepath.IsAbs(c) {
			common = c
		} else if c != "" {
			common = filepath.Join(gitdir, c)
		}
	}
	if filepath.Base(common) != ".git" {
		return ""
	}
	return filepath.Dir(filepath.Clean(common))
}

// checkSettings refuses settings that would take calls around the gate:
// any layer's disableAllHooks, and, unless otherHooks, another PreToolUse
// or PermissionRequest hook. settingsArgs are the values of the user's own
// --settings (a file, or JSON).
// hook is the toolgate-hook executable, and project claude's project
// directory: a hook is toolgate's only if it runs that very file (a command that merely names toolgate-hook, or runs
// another program of that name, is not).
func checkSettings(files, settingsArgs []string, otherHooks bool, hook, project string) error {
	return checkLayers(files, settingsArgs, otherHooks, true, hook, project)
}

// checkLayers is checkSettings; disable says whether disableAllHooks is
// refused too (run's --settings layer pins it off once claude runs).
func checkLayers(files, settingsArgs []string, otherHooks, disable bool, hook, project string) error {
	type layer struct{ name, doc string }
	var layers []layer
	for _, f := range files {
		data, err := paths.ReadRegular(f, claudecode.MaxSettingsFile) // a FIFO the model made there must not hold up the http endpoint
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return &SettingsError{File: f, Problem: "cannot be read (" + err.Error() + ")", Fix: "make it readable, or remove it"}
		}
		layers = append(layers, layer{f, string(data)})
	}
	for _, v := range settingsArgs {
		data, err := paths.ReadRegular(v, claudecode.MaxSettingsFile)
		switch {
		case err == nil:
			layers = append(layers, layer{"--settings " + v, string(data)})
		case gjson.Valid(v):
			layers = append(layers, layer{"--settings JSON", v})
		case !errors.Is(err, fs.ErrNotExist):
			// A file run cannot read (a FIFO, past claudecode.MaxSettingsFile) may still be
			// one Claude Code reads.
			return &SettingsError{File: "--settings " + v, Problem: "cannot be read (" + err.Error() + ")", Fix: "make it a regular file, or remove it"}
		}
	}
	for _, l := range layers {
		if disable && gjson.Get(l.doc, "disableAllHooks").Bool() {
			return &SettingsError{File: l.name, Problem: "sets disableAllHooks, which switches toolgate's hook off too",
				Fix: "remove disableAllHooks from it (if you did not put it there, something else did: see what changed it)"}
		}
		toolgates := filepath.Base(gjson.Get(l.doc, "env.CLAUDE_CODE_SHELL").String()) == contain.ShellName
		for _, v := range boundaryVars {
			// toolgate install's own (run's --settings layer sets them
			// for the session over every other layer's).
			if toolgates && (v == "CLAUDE_CODE_SHELL" || v == contain.BoundaryEnv) {
				continue
			}
			if gjson.Get(l.doc, "env."+gjson.Escape(v)).Exists() {
				return &SettingsError{File: l.name, Problem: "sets " + v + " in its env block, which decides how Claude Code runs Bash commands and would take them out of toolgate's boundary",
					Fix: "remove " + v + " from its env block (toolgate sets it for the session)"}
			}
		}
		if otherHooks {
			continue
		}
		for _, event := range []string{"PreToolUse", "PermissionRequest"} {
			for _, group := range gjson.Get(l.doc, "hooks."+event).Array() {
				for _, h := range group.Get("hooks").Array() {
					if cmd := h.Get("command").String(); !runsHook(cmd, hook, project) {
						return &SettingsError{File: l.name, Problem: fmt.Sprintf("has a %s hook of its own (%q): a hook that allows may give Claude Code another input to run than the one toolgate decided", event, clip.String(cmd, 80)),
							Fix: "take it out, or run with --allow-other-hooks if you trust it"}
					}
				}
			}
		}
	}
	return nil
}

// settingsPoll is how often run checks the settings layers again while
// claude runs.
const settingsPoll = 100 * time.Millisecond

// settingsChanged checks the settings layers again: Claude Code reads them
// again when they change, and the model's code can write them (a layer
// the model adds a PreToolUse hook to may allow a call with another input
// than the one toolgate decided, and run checked them only before claude
// started).
func (r *runner) settingsChanged() error {
	for _, p := range r.pins {
		if what := p.changed(); what != "" {
			return fmt.Errorf("a file the session's claude runs or reads changed during the session: %s", what)
		}
	}
	if r.cfg.AllowOtherHooks {
		return nil
	}
	// disableAllHooks is not refused here: run's own --settings layer pins
	// it off (and the other keys that would fail the hooks).
	err := checkLayers(settingsLayers(claudeDir(r.cfg), r.cfg.Cwd), claudecode.SettingsArgs(r.cfg.ClaudeArgs), false, false, r.cfg.Hook, r.cfg.Cwd)
	var se *SettingsError
	if errors.As(err, &se) {
		return fmt.Errorf("a settings layer changed during the session: %s %s", se.File, se.Problem)
	}
	return nil
}

// watchSettings stops the session as soon as a settings layer would take
// calls around the gate, until ctx ends. With command hooks this poll is
// all there is, and a call in the moment between the write and the poll
// is not covered; with http hooks the endpoint checks on every call as
// well, but a layer written and put back between two calls (after Claude
// Code read it, before it reads it again) is seen by the poll alone.
// Claude Code waits for a layer to settle for a second before it reads
// it: a layer it reads stays on disk longer than the poll.
func (r *runner) watchSettings(ctx context.Context) {
	tick := time.NewTicker(settingsPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if r.made != nil {
			r.made.check()
		}
		if err := r.settingsChanged(); err != nil {
			r.stopSession(err)
			return
		}
	}
}

// runsHook reports whether a hook command runs the toolgate-hook
// executable hookExe, as the hook itself, as the shell would read it (a
// simple command: program and arguments, past leading GOMAXPROCS= and
// exec; $CLAUDE_PROJECT_DIR is project). A bare name is looked up on PATH,
// as the shell will.
//
// The very file is not enough: "toolgate-hook contain --parent PID --
// COMMAND" executes COMMAND, which then answers Claude Code as a hook of
// its own (with an updatedInput, say). So the arguments must be the hook's
// own (hook.CheckArgs), and the command must
// be one whose words the shell passes as they read: any other expansion
// (${PPID:+contain}), a glob, a redirection or a second command, and it is
// not toolgate's.
func runsHook(command, hookExe, project string) bool {
	words, ok := hookWords(command, project)
	if !ok || hookExe == "" || len(words) == 0 || filepath.Base(words[0]) != install.HookName || hook.CheckArgs(words[1:]) != nil {
		return false
	}
	program := words[0]
	if !strings.Contains(program, "/") {
		var err error
		if program, err = exec.LookPath(program); err != nil {
			return false
		}
	}
	if !filepath.IsAbs(program) {
		program = filepath.Join(project, program)
	}
	a, errA := os.Stat(program)
	b, errB := os.Stat(hookExe)
	return errA == nil && errB == nil && os.SameFile(a, b)
}

// hookWords are the program and arguments of a hook command, past leading
// GOMAXPROCS= assignments and exec, when the shell can pass no others: one
// simple command whose words are literal text, quoted or not, and
// $CLAUDE_PROJECT_DIR (project). ok is false for anything else.
func hookWords(command, project string) (words []string, ok bool) {
	f, err := syntax.NewParser().Parse(strings.NewReader(command), "")
	if err != nil || len(f.Stmts) != 1 {
		return nil, false
	}
	st := f.Stmts[0]
	call, isCall := st.Cmd.(*syntax.CallExpr)
	if !isCall || st.Negated || st.Background || st.Coprocess || len(st.Redirs) > 0 {
		return nil, false
	}
	cfg := &expand.Config{Env: expand.ListEnviron("CLAUDE_PROJECT_DIR=" + project)}
	literal := func(w *syntax.Word) (string, bool) {
		for _, part := range w.Parts {
			switch p := part.(type) {
			case *syntax.Lit:
				if strings.ContainsAny(p.Value, "*?[]{}~") { // globs, braces, tildes
					return "", false
				}
			case *syntax.SglQuoted:
				if p.Dollar {
					return "", false
				}
			case *syntax.DblQuoted:
				for _, q := range p.Parts {
					if _, isLit := q.(*syntax.Lit); !isLit && !projectDir(command, q) {
						return "", false
					}
				}
			case *syntax.ParamExp: // unquoted: split and globbed
				if !projectDir(command, p) || strings.ContainsAny(project, " \t\n*?[") {
					return "", false
				}
			default:
				return "", false
			}
		}
		s, err := expand.Literal(cfg, w)
		return s, err == nil
	}
	for _, a := range call.Assigns {
		if a.Name == nil || a.Name.Value != "GOMAXPROCS" || a.Append || a.Naked || a.Index != nil || a.Array != nil {
			return nil, false
		}
		if a.Value != nil {
			if _, ok := literal(a.Value); !ok {
				return nil, false
			}
		}
	}
	for _, w := range call.Args {
		s, ok := literal(w)
		if !ok {
			return nil, false
		}
		words = append(words, s)
	}
	if len(words) > 0 && words[0] == "exec" {
		words = words[1:]
	}
	return words, true
}

// projectDir reports whether a word part is $CLAUDE_PROJECT_DIR as it
// reads, without any operator.
func projectDir(command string, part syntax.WordPart) bool {
	p, ok := part.(*syntax.ParamExp)
	if !ok {
		return false
	}
	text := command[p.Pos().Offset():p.End().Offset()]
	return text == "$CLAUDE_PROJECT_DIR" || text == "${CLAUDE_PROJECT_DIR}"
}
