package policy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/tracetest"
)

// diffAllowed is the allow list the differential fuzzer judges scripts
// with: programs that neither write files nor run others except in ways
// the matcher models (xargs, env, exec, eval, jobs -x ...), and the
// builtins the allow side must refuse whatever the list says.
var diffAllowed = [][]string{{"echo"}, {"printf"}, {"true"}, {"false"}, {":"}, {"pwd"}, {"cat"}, {"ls"},
	{"wc"}, {"head"}, {"grep"}, {"cut"}, {"tr"}, {"basename"}, {"dirname"}, {"seq"}, {"uname", "-s"},
	{"test"}, {"["}, {"cd"}, {"pushd"}, {"popd"}, {"dirs"}, {"type"}, {"times"}, {"umask"}, {"jobs"},
	{"wait"}, {"shift"}, {"exit"}, {"command"}, {"builtin"}, {"exec"}, {"eval"}, {"env"}, {"nice"},
	{"timeout"}, {"nohup"}, {"xargs"}, {"read"}, {"mapfile"}, {"readarray"}, {"unset"}, {"declare"},
	{"export"}, {"local"}, {"readonly"}, {"typeset"}, {"set"}, {"shopt"}, {"hash"}, {"enable"}, {"alias"},
	{"unalias"}, {"trap"}, {"source"}, {"."}, {"let"}, {"getopts"}, {"compgen"}, {"complete"}, {"history"},
	{"fc"}, {"bind"}, {"./tool"}, {"sub/tool"},
	// Programs the shipped policies allow with their option models: an
	// option that writes a file or runs a program must make the allow
	// miss.
	{"git", "log"}, {"git", "diff"}, {"sort"}, {"uniq"}, {"find"}}

// pathDirs is the PATH bash runs with.
var pathDirs = []string{"/usr/local/bin", "/usr/bin", "/bin"}

// bashWorld is the throwaway directory scripts run in, and the policy
// that judges them.
type bashWorld struct {
	dir, home string
	env       []string
	policy    *Policy
	passed    map[string]bool // scripts already run without a failure
}

func newBashWorld(t testing.TB) *bashWorld {
	dir, err := os.MkdirTemp("", "toolgate-bashdiff-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	w := &bashWorld{dir: dir, home: filepath.Join(dir, "home"), passed: map[string]bool{}}
	files := map[string]string{"a.txt": "a\n", "b.txt": "b\n", "sub/c.txt": "c\n", "home/x": "x\n",
		"tool": "#!/bin/sh\nexit 0\n", "sub/tool": "#!/bin/sh\nexit 0\n"}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(dir, 0o755)
	// A repository for git log and git diff to read; git runs as nobody
	// (under root) in a directory root owns.
	w.env = []string{"PATH=" + strings.Join(pathDirs, ":"), "HOME=" + w.home, "LC_ALL=C", "GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
	for _, args := range [][]string{{"init", "-q"}, {"add", "a.txt"}, {"commit", "-qm", "a"}} {
		git := exec.Command("git", args...)
		git.Dir, git.Env = dir, w.env
		if out, err := git.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s (the differential test needs git)", args, err, out)
		}
	}
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a changed\n"), 0o755)
	doc, _ := jsonMarshal(map[string]any{"version": 1, "default": "deny", "rules": []any{map[string]any{
		"id": "allow", "effect": "allow", "tool": "Bash", "input": map[string]any{"command": map[string]any{"command": diffAllowed}}}}})
	w.policy = mustParse(t, string(doc))
	return w
}

// check runs a script with real bash when the allow rule accepts it, and
// fails when bash executed a program no allowed prefix covers, touched a
// file other than /dev/null or tried to connect a socket.
func (w *bashWorld) check(t *testing.T, script string) {
	if len(script) > 16<<10 || w.passed[script] {
		return // bash would spool a large here-document to a temporary file
	}
	c := Call{Tool: "Bash", Input: []byte(jsonString(script)), Cwd: w.dir, Home: w.home}
	if w.policy.Decide(c).Effect != api.EffectAllow {
		return
	}
	start := time.Now()
	tr, err := tracetest.Bash(w.dir, script, w.env, 5*time.Second)
	w.log(script, time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tr.Execs[min(1, len(tr.Execs)):] {
		if !w.covered(e, tr.Chdir) {
			t.Errorf("allowed %q, and bash ran %s %q, which no allowed prefix covers", script, e.Path, e.Argv)
		}
	}
	for _, ch := range tr.Changes {
		if ch.Path != "/dev/null" || !strings.HasPrefix(ch.Syscall, "open") {
			t.Errorf("allowed %q, and bash tried %s on %s %s", script, ch.Syscall, ch.Path, ch.Flags)
		}
	}
	for _, addr := range tr.Connects {
		t.Errorf("allowed %q, and bash tried to connect to %s", script, addr)
	}
	if !t.Failed() && len(w.passed) < 1<<20 {
		w.passed[script] = true
	}
}

// log appends each script bash ran, with how long it took, to the file
// TOOLGATE_BASHDIFF_LOG names (unset: nothing), to count and study runs.
func (w *bashWorld) log(script string, d time.Duration) {
	name := os.Getenv("TOOLGATE_BASHDIFF_LOG")
	if name == "" {
		return
	}
	f, err := os.OpenFile(name, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%d %q\n", d.Milliseconds(), script)
}

// covered reports whether an allowed prefix covers what bash executed: a
// name found on PATH, or a path resolved in the throwaway directory (only
// when the script never changed directory).
func (w *bashWorld) covered(e tracetest.Exec, chdir bool) bool {
	for _, p := range diffAllowed {
		if !w.program(p[0], e.Path, chdir) || len(e.Argv) < len(p) {
			continue
		}
		ok := true
		for i := 1; i < len(p); i++ {
			ok = ok && e.Argv[i] == p[i]
		}
		if ok {
			return true
		}
	}
	return false
}

func (w *bashWorld) program(prefix, path string, chdir bool) bool {
	if !strings.Contains(prefix, "/") {
		dir, base := filepath.Split(path)
		return base == prefix && slices.Contains(pathDirs, filepath.Clean(dir))
	}
	if chdir && !filepath.IsAbs(path) {
		return false
	}
	return tracetest.Under(w.dir, path) == filepath.Join(w.dir, prefix)
}

// FuzzAllowedScriptsAgainstBash is the differential test of the allow side
// against the real bash: for every script the allow rule accepts, raw or
// generated from the grammar in bashgen_test.go, bash must execute only
// programs an allowed prefix covers, open no file but /dev/null for
// writing and connect to nothing. Its seeds, the construct tables' scripts and FuzzCommand's
// corpus run in the normal test suite.
func FuzzAllowedScriptsAgainstBash(f *testing.F) {
	for _, s := range diffSeeds {
		f.Add(s, []byte(nil))
	}
	for _, s := range corpusStrings(f, "FuzzCommand") {
		f.Add(s, []byte(nil))
	}
	for i := range 32 {
		f.Add("", []byte{byte(i), byte(i * 7), byte(i * 13), 3, 1, 4, 1, 5, 9, 2, 6})
	}
	w := newBashWorld(f)
	f.Fuzz(func(t *testing.T, raw string, grammar []byte) {
		w.check(t, raw)
		w.check(t, generate(grammar))
	})
}

var diffSeeds = []string{
	"ls -a | cat; echo hi > /dev/null 2>&1", "cat a.txt sub/c.txt | wc -l", "./tool && sub/tool", "cd sub && ls",
	"echo $(ls) `pwd`", "env -i cat a.txt", "xargs echo < a.txt", "exec cat a.txt", "eval 'echo hi'",
	"jobs -x echo hi", "command -v ls", "printf '%s\\n' a b", "test -f a.txt && echo yes", "[ -n x ]",
	"if true; then echo; else ls; fi", "for v in a b; do echo $v; done", "case x in x) ls;; esac",
	"(ls); { cat a.txt; }", "cat <<EOF\nhello $HOME\nEOF\n", "cat <<< hi", "echo x >&2", "ls 2>/dev/null",
	"timeout 1 cat a.txt", "nice cat a.txt", "uname -s", "time ls", "! false", "echo {a,b}", "ls *.txt",
	"cd ~ && cat x", "pushd sub; popd", "umask; times; dirs", "read x <<< hi", "printf -v x hi",
	"trap 'echo' EXIT", "let x=1", "echo $((1+2))", "[[ -f a.txt ]]", "f() { ls; }; f", "alias l=ls",
	"source /dev/null", "declare x=1", "hash -p /bin/touch ls; ls", "exec 3>&1", "echo hi > out.txt",
	"cat a.txt >&out.txt", "cat x 1>&/tmp/f", "X=1 ls", "./cat", "/usr/bin/cat a.txt", "touch p",
	"echo 'a[$(touch p)]'", "xargs touch < a.txt", "env touch p", "eval 'touch p'", "jobs -x touch p",
	"cd sub && ./tool", "cd sub; sub/tool", "sh -c 'touch p'",
	// what the fuzzer found while the matcher was written
	"tr -s | time exit", "timeout 1 -a", "env X=1 -i", "test \x00",
	// comments, continuations, here-documents and CRs, where bash and
	// the parser may read a line differently
	"ls # \\\ntouch p", "ls # c\r\\\ntouch p", "l\\\ns a.txt", "cat a.txt \\\n; touch p",
	"cat <<EOF\nEO\\\nF\ntouch p\nEOF\n", "cat <<EOF\n\\\nEOF\ntouch p\nEOF\n", "cat <<-EOF\n\tx\n\tEOF\n",
	"cat <<\"EOF\"\n$(touch p)\nEOF\n", "cat <<E\\OF\n$(touch p)\nEOF\n", "ls\r", "cat a.txt\r",
	// options that write or run
	"git log --output=o.txt", "git log -1 --format=x --outp=o.txt", "git diff --ext-diff", "git diff --output=o.txt",
	"sort -o o.txt a.txt", "sort --compress-program=./tool a.txt", "uniq a.txt o.txt", "find . -delete",
	"find . -fprint o.txt", "find . -name '*.txt'", "git log --oneline", "sort a.txt | uniq -c",
}

// corpusStrings reads the string inputs of another fuzz target's corpus.
func corpusStrings(t testing.TB, target string) []string {
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if quoted, ok := strings.CutPrefix(line, "string("); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(quoted, ")")); err == nil {
					out = append(out, s)
				}
			}
		}
	}
	return out
}
