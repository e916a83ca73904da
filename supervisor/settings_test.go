package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toolgate/toolgate/claudecode"
	"github.com/toolgate/toolgate/install"
)

// A hook command counts as toolgate's only when it runs the very
// toolgate-hook file as the hook: its contain mode executes any command,
// which then answers Claude Code as a hook of its own (updatedInput), so
// a settings layer that runs it must be refused like any other hook.
func TestRunsHook(t *testing.T) {
	project := t.TempDir()
	hook := filepath.Join(project, "bin", install.HookName)
	os.MkdirAll(filepath.Dir(hook), 0o700)
	if err := os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	q := claudecode.ShellQuote(hook)
	installed := install.Options{Hook: hook, Policy: "/etc/p.json", ApprovalTimeout: 15 * 60e9}.Command()
	inProject := install.Options{Hook: "bin/toolgate-hook", Policy: "policy.json", ApprovalTimeout: 15 * 60e9}.Command()
	for _, c := range []struct {
		command string
		want    bool
	}{
		{claudecode.CommandLine(hook), true},
		{installed, true},
		{inProject, true},
		{hook, true},
		{`"${CLAUDE_PROJECT_DIR}"/bin/toolgate-hook --policy=p.json`, true},

		{q + " contain --parent 1234 -- sh answer.sh", false},
		{"exec " + q + " contain --parent $PPID -- sh answer.sh", false},
		{"exec " + q + " ${PPID:+contain} ${PPID:+--parent} $PPID ${PPID:+--} ${PPID:+sh} ${PPID:+answer.sh}", false},
		{"exec " + q + " contai[n] --parent 1 -- sh answer.sh", false},
		{"exec " + q + " $'contain' --parent 1 -- sh answer.sh", false},
		{"exec " + q + " $(echo contain) --parent 1 -- sh answer.sh", false},
		{"exec " + q + " --policy p.json -- contain", false},
		{"exec " + q + " --policy p.json extra", false},
		{q + " --policy p.json; sh answer.sh", false},
		{q + " --policy p.json && sh answer.sh", false},
		{q + " --policy p.json < /dev/null", false},
		{"LD_PRELOAD=" + project + "/evil.so exec " + q, false},
		{"TOOLGATE_SOCKET=/tmp/s.sock exec " + q, false},
		{"exec -a contain " + q, false},
		{"sh answer.sh", false},
	} {
		if got := runsHook(c.command, hook, project); got != c.want {
			t.Errorf("runsHook(%s) = %v, want %v", c.command, got, c.want)
		}
	}
}

// A --settings FILE the model's code makes unreadable to run (a FIFO, a
// link to a device, a file past run's bound) is still a layer Claude Code
// may read: run must take it for a changed layer, as it does a settings
// file of its own list, not skip it as if it were not a file.
func TestSettingsArgFileRunCannotRead(t *testing.T) {
	evil := `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"sh answer.sh"}]}]}}`
	for _, c := range []struct {
		name string
		make func(t *testing.T, path string)
	}{
		{"a file with a hook of its own", func(t *testing.T, path string) {
			os.WriteFile(path, []byte(evil), 0o600)
		}},
		{"a FIFO", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"a link to /dev/zero", func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}},
		{"a directory", func(t *testing.T, path string) {
			os.Mkdir(path, 0o700)
		}},
		{"larger than run reads, with a hook of its own", func(t *testing.T, path string) {
			doc := evil[:len(evil)-1] + `,"pad":"` + strings.Repeat(" ", claudecode.MaxSettingsFile) + `"}`
			if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "my-settings.json")
			c.make(t, path)
			r := &runner{cfg: RunConfig{Cwd: dir, ClaudeArgs: []string{"--settings", path, "-p", "hi"}, Hook: filepath.Join(dir, install.HookName)}}
			if err := r.settingsChanged(); err == nil {
				t.Errorf("--settings %s: no change found", c.name)
			}
		})
	}
}

// Claude Code (2.1.332) keeps a project's local settings at the root of
// the git repository it runs in, when it runs in a subdirectory, and
// reads them there: run must check that layer too. For a linked worktree
// the root may be the main repository's.
func TestSettingsLayersAtTheGitRoot(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	cwd := filepath.Join(repo, "sub", "deeper")
	os.MkdirAll(filepath.Join(repo, ".git", "worktrees", "wt"), 0o700)
	os.MkdirAll(cwd, 0o700)
	wt := filepath.Join(root, "wt")
	os.MkdirAll(filepath.Join(wt, "sub"), 0o700)
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+filepath.Join(repo, ".git", "worktrees", "wt")+"\n"), 0o600)
	os.WriteFile(filepath.Join(repo, ".git", "worktrees", "wt", "commondir"), []byte("../..\n"), 0o600)
	for _, c := range []struct{ cwd, want string }{
		{cwd, filepath.Join(repo, ".claude", "settings.local.json")},
		{filepath.Join(wt, "sub"), filepath.Join(wt, ".claude", "settings.local.json")},
		{filepath.Join(wt, "sub"), filepath.Join(repo, ".claude", "settings.local.json")},
	} {
		layers := settingsLayers("", c.cwd)
		found := false
		for _, l := range layers {
			found = found || l == c.want
		}
		if !found {
			t.Errorf("in %s, the layers %q leave out %s", c.cwd, layers, c.want)
		}
	}
}

// A settings layer's env block is claude's environment for every Bash
// command: one that sets a variable the boundary is made of (the shell,
// its preload, the boundary itself, the temp dir) would run the session's
// commands outside it, so run refuses it. toolgate install's own layer
// names toolgate-bash and its boundary, which run's layer overrides.
func TestSettingsLayerThatMovesBashOutOfTheBoundary(t *testing.T) {
	dir := t.TempDir()
	hook := filepath.Join(dir, install.HookName)
	for _, v := range []string{"CLAUDE_CODE_SHELL", "CLAUDE_CODE_SHELL_PREFIX", "TOOLGATE_BOUNDARY", "LD_PRELOAD", "TMPDIR", "CLAUDE_CODE_TMPDIR"} {
		path := filepath.Join(dir, "settings-"+v+".json")
		os.WriteFile(path, []byte(`{"env": {"`+v+`": "/bin/bash"}}`), 0o600)
		err := checkSettings([]string{path}, nil, false, hook, dir)
		if err == nil || !strings.Contains(err.Error(), "sets "+v) {
			t.Errorf("a layer that sets %s: %v", v, err)
		}
	}
	installed := filepath.Join(dir, "installed.json")
	os.WriteFile(installed, []byte(`{"env": {"CLAUDE_CODE_SHELL": "/opt/toolgate/toolgate-bash", "TOOLGATE_BOUNDARY": "w @project\n"}}`), 0o600)
	if err := checkSettings([]string{installed}, nil, false, hook, dir); err != nil {
		t.Errorf("toolgate install's env block: %v", err)
	}
}
