package policy

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The guard resolves the links of a path the model names, as far as it
// exists. A path of many components that do not exist must not cost the
// daemon time quadratic in its length: 80 KB of "/a" held a core for 5 s,
// 8 MB (an event's bound) would for hours.
func TestGuardResolvesALongPathQuickly(t *testing.T) {
	g := NewGuard(GuardPaths{ConfigDir: filepath.Join(t.TempDir(), "config")})
	in, _ := json.Marshal(map[string]string{"file_path": strings.Repeat("/a", 80000)})
	done := make(chan string, 1)
	go func() { rule, _, _ := g.check(Call{Tool: "Read", Input: in, Cwd: "/"}); done <- rule }()
	select {
	case rule := <-done:
		if rule != "" {
			t.Errorf("a path of missing components: denied by %s", rule)
		}
	case <-time.After(3 * time.Second): // a bound on a hang, not a wait for an event
		t.Fatal("the guard still resolves a 160 KB path after 3 s")
	}
}

// resolveLinksOneByOne is resolveLinks as it was: each ancestor tried
// from the longest down.
func resolveLinksOneByOne(p string) string {
	rest := ""
	for dir := p; dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return path.Join(real, rest)
		}
		rest = path.Join(filepath.Base(dir), rest)
	}
	return p
}

// resolveLinks finds what trying each ancestor found: through links to
// directories, links that go up, dangling links, loops, files, missing
// components, relative paths.
func TestGuardResolvesLinksAsBefore(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(target, p string) {
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	mk("d/e/f")
	mk("secret")
	if err := os.WriteFile(filepath.Join(root, "d/file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ln("d/e", "toe")
	ln("../secret", "d/up")
	ln("missing", "dangling")
	ln("loop2", "loop1")
	ln("loop1", "loop2")
	ln(".", "self")
	ln(filepath.Join(root, "secret"), "d/e/abs")
	rel, err := filepath.Rel("/", root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", "d", "d/e/f", "d/e/f/x/y", "toe", "toe/f/x", "d/up", "d/up/x/y", "dangling", "dangling/x",
		"loop1", "loop1/x", "self/self/d/up/z", "d/file", "d/file/x", "d/e/abs/x", "nothing/at/all", strings.Repeat("self/", 300) + "d/x"} {
		abs := path.Clean(root + "/" + p)
		if got, want := resolveLinks(abs), resolveLinksOneByOne(abs); got != want {
			t.Errorf("resolveLinks(%s) = %s, want %s", abs, got, want)
		}
	}
	for _, p := range []string{"/", ".", "..", "../..", "a", "a/b", rel, rel + "/toe/f/x", "../" + rel} {
		if got, want := resolveLinks(p), resolveLinksOneByOne(p); got != want {
			t.Errorf("resolveLinks(%s) = %s, want %s", p, got, want)
		}
	}
}
