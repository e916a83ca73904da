package supervisor

import (
	"cmp"
	"crypto/rand"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/toolgate/toolgate/claudecode"
	"github.com/toolgate/toolgate/contain"
	"github.com/toolgate/toolgate/policy"
)

// boundary is what the session's Bash commands may touch: they write in
// the project, the session's temp dir, the usual devices and the trees the user
// declares; in the project, git's config and hooks, .claude and .mcp.json
// are read-only, and so is every path toolgate protects that lies inside
// a writable tree (a policy file kept in the project, say).
func boundary(cfg RunConfig, tmp, files string, start projectConfig) contain.Boundary {
	writable := append(append([]string{cfg.Cwd, tmp}, contain.Devices...), cfg.Writable...)
	// What run gives claude (the shell's link, the preload, the settings)
	// is read-only in the session: a mode changed there could make the
	// dynamic loader pass the preload over.
	readOnly := append(contain.GitDirs(cfg.Cwd), files)
	guard := policy.NewGuard(policy.GuardPaths{Gate: cfg.Paths, ConfigDir: cfg.ConfigDir, Exe: cfg.Self,
		ClaudeDir: claudeDir(cfg), Project: cfg.Cwd, Extra: []string{cfg.PolicyPath, cfg.Hook, contain.ShellPath(cfg.Hook),
			filepath.Join(filepath.Dir(cfg.Hook), contain.PreloadName)}})
	for _, p := range guard.Protected {
		if p, err := filepath.Abs(p); err == nil && within(p, writable) {
			readOnly = append(readOnly, p)
		}
	}
	// .claude, and git's hooks and worktrees, are pinned only where they
	// exist: made now, the model's commands cannot make them later (a
	// hooks directory git runs from, a worktree's commondir).
	made := []string{filepath.Join(cfg.Cwd, ".claude")}
	if st, err := os.Lstat(filepath.Join(cfg.Cwd, ".git")); err == nil && st.IsDir() {
		made = append(made, filepath.Join(cfg.Cwd, ".git", "hooks"), filepath.Join(cfg.Cwd, ".git", "worktrees"))
	}
	for _, dir := range made {
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			readOnly = append(readOnly, dir) // tried, and refused if it cannot be
		}
	}
	// Claude Code's shell snapshots are the session's own: a command that
	// makes Claude Code start every later one as the snapshot's "-c -l"
	// (a snapshot made unreadable) writes only the session's, which only
	// its own commands source.
	// (Where it cannot be made, the boundary's probe fails.)
	snapshots := filepath.Join(claudeDir(cfg), "shell-snapshots")
	os.MkdirAll(snapshots, 0o700)
	// A hooks directory or an included config file the project's git
	// config names inside a writable tree (husky's .husky/_) is git's
	// config and hooks too.
	for _, p := range start.gitPaths {
		if within(p, writable) {
			readOnly = append(readOnly, p)
		}
	}
	projects, nested := nestedPins(start)
	return contain.Boundary{Writable: writable, Snapshots: snapshots, Own: []string{snapshots},
		Projects: append([]string{cfg.Cwd}, projects...), ReadOnly: append(readOnly, nested...), NoNetwork: cfg.NoNetwork}
}

// gitConfigPaths are the paths the project's git config names for git to
// run hooks from (core.hooksPath) or read more config from (include.path,
// includeIf.*.path), resolved as git resolves them.
func gitConfigPaths(project, home string) []string {
	config := filepath.Join(project, ".git", "config")
	data, err := os.ReadFile(config)
	if err != nil {
		return nil
	}
	if lower := strings.ToLower(string(data)); !strings.Contains(lower, "hookspath") && !strings.Contains(lower, "include") {
		return nil // no git needed to know
	}
	values := func(args ...string) []string {
		out, _ := exec.Command("git", append([]string{"config", "--file", config, "--null"}, args...)...).Output()
		var vs []string
		for _, v := range strings.Split(string(out), "\x00") {
			if _, value, ok := strings.Cut(v, "\n"); ok {
				v = value // --get-regexp: the key, a newline, the value
			}
			if v != "" {
				vs = append(vs, v)
			}
		}
		return vs
	}
	resolve := func(p, base string) string {
		switch {
		case p == "~" || strings.HasPrefix(p, "~/"):
			return filepath.Join(home, strings.TrimPrefix(p, "~"))
		case filepath.IsAbs(p):
			return filepath.Clean(p)
		}
		return filepath.Join(base, p)
	}
	var paths []string
	for _, p := range values("--get-all", "core.hooksPath") {
		paths = append(paths, resolve(p, project))
	}
	for _, p := range values("--get-regexp", `^include(if\..*)?\.path$`) {
		paths = append(paths, resolve(p, filepath.Dir(config)))
	}
	return paths
}

// maxNestedPins bounds what nestedPins pins (each is a mount in the
// session's namespace); run warns of the rest.
const maxNestedPins = 512

// nestedPins is what the boundary pins below the project's root, of what
// was there at the start: each directory that holds a .git, a .claude or a
// .mcp.json is a project of its own (its git config and hooks, .claude and
// .mcp.json read-only), and a git directory that is not named .git has
// its config and hooks read-only. At most maxNestedPins, the shallowest
// first.
func nestedPins(start projectConfig) (projects, readOnly []string) {
	paths := slices.Collect(maps.Keys(start.found))
	slices.SortFunc(paths, func(a, b string) int {
		return cmp.Or(cmp.Compare(strings.Count(a, "/"), strings.Count(b, "/")), strings.Compare(a, b))
	})
	seen := map[string]bool{}
	for _, p := range paths {
		dir := filepath.Dir(p)
		switch {
		case len(projects)+len(readOnly) >= maxNestedPins:
			return projects, readOnly
		case filepath.Base(p) == "HEAD":
			readOnly = append(readOnly, filepath.Join(dir, "config"), filepath.Join(dir, "hooks"))
		case !seen[dir]:
			seen[dir] = true
			projects = append(projects, dir)
		}
	}
	return projects, readOnly
}

// sessionShell is how the session's Bash commands enter the boundary:
// bash with toolgate-bash.so on the Claude Code release the end-to-end
// suite pins, which it checks gives its shell the environment it was
// given; on any other, toolgate-bash, which fails closed where
// toolgate-bash.so would be passed over.
func sessionShell(cfg RunConfig, files string) (contain.Shell, error) {
	if version, known := claudecode.InstalledVersion(cfg.Claude); !known || version != claudecode.PinnedVersion {
		return contain.Shell{Path: contain.ShellPath(cfg.Hook)}, nil
	}
	return contain.SessionShell(cfg.Hook, files)
}

// within reports whether path is one of roots or beneath one.
func within(path string, roots []string) bool {
	for _, r := range roots {
		if path == r || strings.HasPrefix(path, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// boundaryEnv is claude's environment with the boundary for every Bash
// command: the shell Claude Code runs each with, and what it reads the
// boundary from. A shell prefix would run outside it, so none is passed on.
func (r *runner) boundaryEnv(env []string) ([]string, error) {
	enc, err := r.level.Boundary.PerCommand().Encode()
	if err != nil {
		return nil, err
	}
	kept := env[:0:0]
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); !slices.Contains(boundaryVars, name) {
			kept = append(kept, kv)
		}
	}
	// What the person preloads stays, behind the boundary.
	for _, kv := range r.cfg.Env {
		if strings.HasPrefix(kv, "LD_PRELOAD=") {
			kept = append(kept, kv)
		}
	}
	return append(r.shell.Env(kept, enc), "TMPDIR="+r.tmp, "CLAUDE_CODE_TMPDIR="+r.tmp), nil
}

// boundaryVars are the variables of claude's environment that decide the
// boundary: a settings layer's env block that sets one replaces it.
var boundaryVars = []string{"CLAUDE_CODE_SHELL", "CLAUDE_CODE_SHELL_PREFIX", contain.BoundaryEnv, "LD_PRELOAD", "TMPDIR", "CLAUDE_CODE_TMPDIR"}

// madeLater is what would start code outside the boundary but did not
// exist when the session started, so that no mount pinned it. A .mcp.json
// the session's commands make in the project (claude -p starts its
// servers at the next session without asking, and so does run's tool
// listing) is moved aside the moment run sees it. At the end, what they
// made deeper in the project is moved aside too: a repository (git runs
// its core.fsmonitor and hooks when the person's git status goes into
// it), a directory made into a git directory (its HEAD is moved aside), a
// .git/commondir (it points git at another config and hooks), a
// .claude (skills and agents whose hooks Claude Code runs: with http
// hooks, also before every call that could load one, which is then
// denied); a .git they made at the project's root (git init) is reported.
type madeLater struct {
	project, suffix string
	mcp, git        bool          // missing at the start
	commondir       bool          // .git/commondir there at the start
	start           projectConfig // what the project held at the start
	tmp             string        // the session's temp dir, empty at the start

	mu             sync.Mutex
	notes          []string
	saidUnreadable map[string]bool
	// tainted is set once the session's commands made a .claude (or hid
	// one in a directory made unreadable): Claude Code may have read what
	// it defines already, when the model worked beside it, and holds it.
	tainted bool
}

// walkLimit bounds the walks of the project: past it, run says what it
// could not check.
var walkLimit = 500_000

func newMadeLater(project, tmp, session string, start projectConfig) *madeLater {
	_, mcpErr := os.Lstat(filepath.Join(project, ".mcp.json"))
	_, gitErr := os.Lstat(filepath.Join(project, ".git"))
	m := &madeLater{project: project, suffix: ".made-by-" + session + "-" + rand.Text()[:8],
		mcp: os.IsNotExist(mcpErr), git: os.IsNotExist(gitErr)}
	_, cdErr := os.Lstat(filepath.Join(project, ".git", "commondir"))
	m.commondir = cdErr == nil
	m.start, m.tmp, m.saidUnreadable = start, tmp, map[string]bool{}
	return m
}

// projectConfig is what in a project, below its root, starts code
// outside the boundary later: the .git, .claude and .mcp.json entries
// (found is keyed by their paths), and the HEAD of every directory git
// would take for a git directory of its own (HEAD, objects and refs: git
// looks for one in each directory it searches, and runs the config
// there, also through a commondir). unreadable are the directories the
// walk could not read (what they hold could not be checked); complete is
// false when the walk stopped at walkLimit.
type projectConfig struct {
	found      map[string]bool
	unreadable map[string]bool
	complete   bool
	// gitPaths are the hooks directories and included config files the
	// project's git config names (gitConfigPaths), and missing those of
	// them that did not exist at the start: made later, no mount pins them.
	gitPaths, missing []string
}

// nestedConfig walks project for its projectConfig, without going into a
// .claude, and in a .git looking for a .claude only; what the root holds
// counts only with all, for a tree whose root is not a project's (the
// session's temp dir).
func nestedConfig(project string) projectConfig { return configIn(project, false) }

func configIn(root string, all bool) projectConfig {
	found, unreadable, n := map[string]bool{}, map[string]bool{}, 0
	complete := true
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if n++; n > walkLimit {
			complete = false
			return filepath.SkipAll
		}
		if err != nil {
			if d != nil && d.IsDir() || p == root {
				unreadable[p] = true
			}
			return nil
		}
		if p == root {
			return nil
		}
		name := d.Name()
		if inGit(root, p) {
			// A git directory is the session's to write in but for what
			// is pinned: a .claude there is one Claude Code loads through
			// a link, or when the model reads a file beside it.
			if name == ".claude" {
				found[p] = true
				return filepath.SkipDir
			}
			return nil
		}
		if name == ".git" || name == ".claude" || name == ".mcp.json" {
			if all || filepath.Dir(p) != root {
				found[p] = true
			}
			if name == ".claude" && d.IsDir() {
				return filepath.SkipDir
			}
		}
		if name == "HEAD" && !d.IsDir() && gitDirectory(filepath.Dir(p)) {
			found[p] = true
		}
		return nil
	})
	return projectConfig{found: found, unreadable: unreadable, complete: complete}
}

// inGit reports whether p, below root, is inside a .git directory.
func inGit(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	parts := strings.Split(filepath.Dir(rel), string(filepath.Separator))
	return slices.Contains(parts, ".git")
}

// gitDirectory reports whether git could take dir, which holds a HEAD,
// for a git directory: its objects and refs are beside it, of any kind,
// or where a commondir names.
func gitDirectory(dir string) bool {
	exists := func(name string) bool { _, err := os.Lstat(filepath.Join(dir, name)); return err == nil }
	return exists("commondir") || exists("objects") && exists("refs")
}

// check moves a .mcp.json made since the start aside.
func (m *madeLater) check() {
	if !m.mcp {
		return
	}
	mcp := filepath.Join(m.project, ".mcp.json")
	if _, err := os.Lstat(mcp); err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.aside(mcp, "whose MCP servers Claude Code would start unasked at the next session")
	m.mcp = false // said once
}

// aside moves what the session made aside (removes it, if that fails),
// and notes it. m.mu is held.
func (m *madeLater) aside(path, why string) {
	if filepath.Base(path) == ".claude" {
		m.tainted = true
	}
	to := path + m.suffix
	err := os.Rename(path, to)
	if err == nil {
		m.notes = append(m.notes, fmt.Sprintf("the session's commands made %s, %s: moved to %s; read it, and move it back only if you trust it", path, why, to))
		return
	}
	if rmErr := os.RemoveAll(path); rmErr != nil {
		m.notes = append(m.notes, fmt.Sprintf("the session's commands made %s, %s, and it could not be moved aside (%v) nor removed (%v): read it before you run git or claude here again", path, why, err, rmErr))
		return
	}
	m.notes = append(m.notes, fmt.Sprintf("the session's commands made %s, %s, which could not be moved aside (%v): removed", path, why, err))
}

// loadsConfig are the tools with which Claude Code loads what a .claude
// directory defines (skills, agents, commands), and with it their hooks,
// which run outside the Bash boundary.
var loadsConfig = map[string]bool{"Skill": true, "Task": true, "Agent": true, "SlashCommand": true, "EnterWorktree": true}

// sweep moves aside the nested .git and .claude the session's commands
// made since the start, before a call that could load what one defines,
// and says what it moved ("" when nothing).
func (m *madeLater) sweep() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	before := len(m.notes)
	complete := m.nestedAside()
	moved := m.notes[before:]
	if !complete {
		moved = append(moved, fmt.Sprintf("the project or the session's temp dir holds more than %d files: run cannot look through it for a .claude the session's commands made", walkLimit))
	}
	if len(moved) == 0 && m.tainted {
		moved = append(moved, "the session's commands made a .claude earlier, and Claude Code may hold what it defines: no skill, agent or command loads for the rest of this session")
	}
	return strings.Join(moved, "; ")
}

// beside moves aside a .claude the session made in the directory a file
// tool is about to work in at path, or above it up to the project's root
// or the temp dir's, as written and with its links resolved: Claude Code
// loads the skills of the directories it works in when it works there,
// and holds them. It says what it moved ("" when nothing).
func (m *madeLater) beside(path string) string {
	if path == "" {
		return ""
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(m.project, path) // claude's working directory
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	before := len(m.notes)
	dir := filepath.Dir(path)
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		dir = path // a tool that works in a directory works beside what it holds
	}
	dirs := []string{dir}
	for d := dir; ; d = filepath.Dir(d) {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			dirs = append(dirs, real)
			break
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	for _, dir := range dirs {
		for d := dir; within(d, []string{m.project, m.tmp}) && d != m.project; d = filepath.Dir(d) {
			c := filepath.Join(d, ".claude")
			if _, err := os.Lstat(c); err == nil && !m.start.found[c] {
				m.aside(c, "Claude Code configuration (skills, agents and their hooks) for that directory")
			}
			if d == m.tmp {
				break
			}
		}
	}
	return strings.Join(m.notes[before:], "; ")
}

// nestedAside moves aside what the session made below the project's root,
// and anything of the kind in its temp dir (a link in the project leads
// Claude Code there), and notes each directory they made unreadable,
// whose contents cannot be checked. m.mu is held.
func (m *madeLater) nestedAside() (complete bool) {
	now := nestedConfig(m.project)
	made := configIn(m.tmp, true)
	complete = now.complete && made.complete
	for _, c := range []projectConfig{now, made} {
		for p := range c.unreadable {
			if !m.start.unreadable[p] && !m.saidUnreadable[p] {
				m.saidUnreadable[p] = true
				m.tainted = true
				m.notes = append(m.notes, fmt.Sprintf("the session's commands made %s unreadable: what it holds (a repository, a .claude) could not be checked; look before you run git or claude there", p))
			}
		}
	}
	for p := range made.found {
		if filepath.Base(p) == ".claude" { // the rest goes with the temp dir
			now.found[p] = true
		}
	}
	for p := range now.found {
		if m.start.found[p] {
			continue
		}
		why := "a repository whose config and hooks git runs when your git status goes into it"
		switch filepath.Base(p) {
		case ".claude":
			why = "Claude Code configuration (skills, agents and their hooks) for that directory"
		case ".mcp.json":
			why = "whose MCP servers Claude Code would start unasked when started in that directory"
		case "HEAD":
			why = "which makes " + filepath.Dir(p) + " a git directory whose config and hooks git runs when your git status goes into it"
		}
		m.aside(p, why)
	}
	m.start.complete = m.start.complete && now.complete
	return complete
}

// finish checks once more and returns what to tell the person.
func (m *madeLater) finish() []string {
	m.check()
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := os.Lstat(filepath.Join(m.project, ".git")); m.git && err == nil {
		m.notes = append(m.notes, fmt.Sprintf("the session's commands made a git repository in %s: its .git/config and .git/hooks are theirs, and git runs what they name (core.fsmonitor, hooks); read them before you run git there", m.project))
	}
	if commondir := filepath.Join(m.project, ".git", "commondir"); !m.git && !m.commondir {
		if _, err := os.Lstat(commondir); err == nil {
			m.aside(commondir, "which points git at another config and hooks")
		}
	}
	for _, p := range m.start.missing {
		if _, err := os.Lstat(p); err == nil {
			m.aside(p, "which your git config names for hooks or more config: git runs what it holds")
		}
	}
	m.nestedAside()
	if !m.start.complete {
		m.notes = append(m.notes, fmt.Sprintf("the project holds more than %d files: run did not look through all of it for repositories or .claude directories the session's commands made", walkLimit))
	}
	return m.notes
}

// fileToolsWritable are the trees the session's guard lets Claude Code's
// write tools write in: those its Bash commands may, with the boundary;
// no limit without it.
func (r *runner) fileToolsWritable() []string {
	if !r.level.Bounded() {
		return nil
	}
	var trees []string
	for _, w := range r.level.Boundary.Writable {
		if !slices.Contains(contain.Devices, w) {
			trees = append(trees, w)
		}
	}
	return trees
}
