package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/claudecode"
	"github.com/toolgate/toolgate/contain"
)

// What the session's commands made that no mount could pin is moved
// aside: a .mcp.json at once, and at the end a .git/commondir, a nested
// repository, a directory made a git directory (its HEAD) and a nested
// .claude; what was there before stays.
func TestMadeLaterMovesAsideWhatTheSessionMade(t *testing.T) {
	project := t.TempDir()
	for _, d := range []string{".git", "old/.git", "old/.claude"} {
		os.MkdirAll(filepath.Join(project, d), 0o755)
	}
	tmp := t.TempDir()
	start := nestedConfig(project)
	hooks := filepath.Join(project, ".githooks") // core.hooksPath names it; missing at the start
	start.missing = []string{hooks}
	m := newMadeLater(project, tmp, "ses_x", start)
	os.MkdirAll(hooks, 0o755)
	// A skill in the temp dir, which a link in the project leads Claude
	// Code to; a git directory through a commondir.
	os.MkdirAll(filepath.Join(tmp, "work", ".claude", "skills", "fmt"), 0o755)
	os.MkdirAll(filepath.Join(project, "lib"), 0o755)
	os.WriteFile(filepath.Join(project, "lib", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(project, "lib", "commondir"), []byte("../build/cache\n"), 0o644)
	// Skills inside the project's .git, which a link leads Claude Code to.
	os.MkdirAll(filepath.Join(project, ".git", "x", ".claude", "skills", "fmt"), 0o755)
	os.MkdirAll(filepath.Join(project, ".git", "objects", ".claude", "skills", "fmt"), 0o755)
	for _, d := range []string{"vendor/lib/.git", "sub/.claude/skills/fmt", "src/objects", "src/refs/heads", "docs"} {
		os.MkdirAll(filepath.Join(project, d), 0o755)
	}
	os.WriteFile(filepath.Join(project, "src", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(project, "docs", "HEAD"), []byte("a file named HEAD\n"), 0o644)
	os.WriteFile(filepath.Join(project, ".git", "commondir"), []byte("../elsewhere\n"), 0o644)
	os.WriteFile(filepath.Join(project, ".mcp.json"), []byte("{}"), 0o644)
	m.check()
	notes := m.finish()
	for _, gone := range []string{".mcp.json", ".git/commondir", "vendor/lib/.git", "sub/.claude", "src/HEAD", "lib/HEAD", ".git/x/.claude", ".git/objects/.claude", ".githooks"} {
		if _, err := os.Lstat(filepath.Join(project, gone)); err == nil {
			t.Errorf("%s is still there", gone)
		}
	}
	if _, err := os.Lstat(filepath.Join(tmp, "work", ".claude")); err == nil {
		t.Errorf("the temp dir's .claude is still there")
	}
	for _, kept := range []string{".git", "old/.git", "old/.claude", "src/objects", "docs/HEAD"} {
		if _, err := os.Lstat(filepath.Join(project, kept)); err != nil {
			t.Errorf("%s, there before the session, is gone", kept)
		}
	}
	if len(notes) != 10 {
		t.Errorf("notes: %q", notes)
	}
	for _, n := range notes {
		if !strings.Contains(n, "moved to ") || !strings.Contains(n, ".made-by-ses_x-") {
			t.Errorf("note: %s", n)
		}
	}
}

// Bash commands enter the boundary through toolgate-bash.so only on the
// Claude Code release whose passing of its environment to its shell the
// end-to-end suite checks; on another, or one run cannot tell, through
// toolgate-bash, which fails closed where the preload would be passed
// over.
func TestSessionShellPreloadsOnlyOnThePinnedRelease(t *testing.T) {
	bin := t.TempDir()
	for _, f := range []string{contain.ShellName, contain.PreloadName, "toolgate-hook"} {
		os.WriteFile(filepath.Join(bin, f), nil, 0o755)
	}
	for version, preload := range map[string]bool{claudecode.PinnedVersion: true, "2.1.999": false, claudecode.OldestTestedVersion: false, "": false} {
		install := filepath.Join(t.TempDir(), "node_modules", "@anthropic-ai", "claude-code")
		os.MkdirAll(filepath.Join(install, "bin"), 0o755)
		claude := filepath.Join(install, "bin", "claude.exe")
		os.WriteFile(claude, nil, 0o755)
		if version != "" {
			os.WriteFile(filepath.Join(install, "package.json"), []byte(`{"name": "@anthropic-ai/claude-code", "version": "`+version+`"}`), 0o644)
		}
		sh, err := sessionShell(RunConfig{Claude: claude, Hook: filepath.Join(bin, "toolgate-hook")}, t.TempDir())
		if err != nil || (sh.Preload != "") != preload {
			t.Errorf("Claude Code %q: %+v, %v; want the preload %v", version, sh, err, preload)
		}
		if !preload && sh.Path != filepath.Join(bin, contain.ShellName) {
			t.Errorf("Claude Code %q: the shell is %s, not toolgate-bash", version, sh.Path)
		}
	}
}

// What the project held below its root at the start is pinned as the root
// is: each directory with a .git, a .claude or a .mcp.json as a project of
// its own, a git directory not named .git by its config and hooks; the
// shallowest first, at most maxNestedPins.
func TestNestedPinsPinWhatWasThereAtTheStart(t *testing.T) {
	start := projectConfig{found: map[string]bool{"/p/vendor/lib/.git": true, "/p/vendor/lib/.claude": true,
		"/p/sub/.mcp.json": true, "/p/src/HEAD": true}}
	projects, readOnly := nestedPins(start)
	if want := []string{"/p/sub", "/p/vendor/lib"}; !slices.Equal(projects, want) {
		t.Errorf("projects %q, want %q", projects, want)
	}
	if want := []string{"/p/src/config", "/p/src/hooks"}; !slices.Equal(readOnly, want) {
		t.Errorf("read-only %q, want %q", readOnly, want)
	}
	many := projectConfig{found: map[string]bool{}}
	for i := range maxNestedPins + 10 {
		many.found[fmt.Sprintf("/p/deep/er/%d/.git", i)] = true
	}
	many.found["/p/top/.claude"] = true
	projects, _ = nestedPins(many)
	if len(projects) != maxNestedPins || projects[0] != "/p/top" {
		t.Errorf("%d projects, the first %q; want %d, /p/top first", len(projects), projects[0], maxNestedPins)
	}
}

// The paths a project's git config names for hooks and more config are
// found as git resolves them: core.hooksPath from the work tree, an
// include from the config's directory, ~ from home.
func TestGitConfigPathsAreWhereGitLooks(t *testing.T) {
	project, home := t.TempDir(), t.TempDir()
	if out, err := exec.Command("git", "init", "-q", project).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	for _, kv := range [][]string{{"core.hooksPath", ".husky/_"}, {"include.path", "../shared.gitconfig"}, {"includeIf.gitdir:~/.path", "~/work.gitconfig"}} {
		if out, err := exec.Command("git", "-C", project, "config", "--add", kv[0], kv[1]).CombinedOutput(); err != nil {
			t.Fatalf("git config: %v %s", err, out)
		}
	}
	got := gitConfigPaths(project, home)
	want := []string{filepath.Join(project, ".husky/_"), filepath.Join(project, "shared.gitconfig"), filepath.Join(home, "work.gitconfig")}
	if !slices.Equal(got, want) {
		t.Errorf("gitConfigPaths = %q, want %q", got, want)
	}
	if got := gitConfigPaths(t.TempDir(), home); got != nil {
		t.Errorf("without a repository: %q", got)
	}
}

// Past the walk's limit, run cannot tell whether the session made a
// .claude: a call that could load one is denied, not let through.
func TestSweepDeniesWhatItCouldNotLookThrough(t *testing.T) {
	project := t.TempDir()
	m := newMadeLater(project, t.TempDir(), "ses_x", nestedConfig(project))
	if why := m.sweep(); why != "" {
		t.Fatalf("an empty project: %s", why)
	}
	defer func(n int) { walkLimit = n }(walkLimit)
	walkLimit = 10
	for i := range 20 {
		os.WriteFile(filepath.Join(project, fmt.Sprint(i)), nil, 0o644)
	}
	if why := m.sweep(); !strings.Contains(why, "cannot look through it") {
		t.Errorf("past the limit, sweep says %q", why)
	}
}

// A file tool about to work beside a .claude the session made (in its
// directory or above, as written or through a link) moves it aside first;
// from then on no call that could load a skill is let through, since
// Claude Code may already hold what it found. What was there at the
// start is left alone.
func TestBesideMovesAsideWhatAFileToolWouldFind(t *testing.T) {
	project, tmp := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(project, "old", ".claude"), 0o755)
	m := newMadeLater(project, tmp, "ses_x", nestedConfig(project))
	if why := m.beside(filepath.Join(project, "old", "notes.txt")); why != "" {
		t.Errorf("beside what was there at the start: %s", why)
	}
	if why := m.sweep(); why != "" {
		t.Errorf("sweep before anything was made: %s", why)
	}
	os.MkdirAll(filepath.Join(project, "sub", ".claude", "skills", "fmt"), 0o755)
	os.MkdirAll(filepath.Join(tmp, "work", ".claude", "skills", "fmt"), 0o755)
	os.Symlink(filepath.Join(tmp, "work"), filepath.Join(project, "link"))
	if why := m.beside(filepath.Join(project, "sub", "deep", "notes.txt")); !strings.Contains(why, "sub/.claude") {
		t.Errorf("beside a made .claude above: %q", why)
	}
	if why := m.beside(filepath.Join(project, "link", "notes.txt")); why == "" {
		t.Errorf("beside a made .claude through a link: nothing moved")
	}
	if _, err := os.Lstat(filepath.Join(tmp, "work", ".claude")); err == nil {
		t.Errorf("the .claude a link led to is still there")
	}
	if why := m.sweep(); !strings.Contains(why, "no skill, agent or command loads") {
		t.Errorf("sweep after the session made a .claude: %q", why)
	}
	// A directory the tool works in, and a path relative to claude's
	// working directory (the project).
	os.MkdirAll(filepath.Join(project, "pkg", ".claude", "skills", "fmt"), 0o755)
	if why := m.beside(filepath.Join(project, "pkg")); !strings.Contains(why, "pkg/.claude") {
		t.Errorf("a tool working in a directory that holds a made .claude: %q", why)
	}
	os.MkdirAll(filepath.Join(project, "rel", ".claude", "skills", "fmt"), 0o755)
	if why := m.beside("rel/notes.txt"); !strings.Contains(why, "rel/.claude") {
		t.Errorf("a relative path beside a made .claude: %q", why)
	}
}
