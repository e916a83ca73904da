package policy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/paths"
)

// hiddenByContinuation are scripts in which bash runs `touch ran` on a
// line the parser reads as part of a comment or of a here-document.
var hiddenByContinuation = []struct{ name, script, why string }{
	{"a comment ending in a backslash", "ls # \\\ntouch ran", "a comment ends in a backslash"},
	{"a comment in a subshell", "(ls # \\\ntouch ran\n)", "a comment ends in a backslash"},
	{"a comment in bash -c", "bash -c 'ls # \\\ntouch ran'", "a comment ends in a backslash"},
	{"a here-document delimiter split by a backslash", "cat <<EOF\nEO\\\nF\ntouch ran\nEOF", "a here-document"},
	{"a here-document delimiter after a lone backslash", "cat <<EOF\n\\\nEOF\ntouch ran\nEOF", "a here-document"},
	{"a <<- delimiter split by a backslash", "cat <<-EOF\n\tEO\\\nF\ntouch ran\nEOF", "a here-document"},
	{"a backslash before CR LF", "echo a\\\r\ntouch ran", "CR LF"},
}

// Bash ends a comment at the newline whatever comes before it, joins the
// lines of an unquoted here-document before it looks for the delimiter,
// and escapes a CR: a command on the line after runs. (A backslash before
// CR LF is refused wherever it is, quoted or not: no script needs one, and
// the parser joins the lines.) The matcher reads
// such a script as unknown: no allow vouches for it, a deny of the
// program matches, and policy explain says why. Each script is run by the
// real bash first, to show that it does run the command.
func TestLinesJoinedAsBashJoinsThem(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("these tests run the real bash: install bash")
	}
	allow := mustParse(t, `{"version":1,"default":"ask","rules":[
		{"id":"allow","effect":"allow","tool":"Bash","input":{"command":{"command":[["ls"],["cat"],["echo"],["bash"]]}}}]}`)
	deny := mustParse(t, `{"version":1,"default":"allow","rules":[
		{"id":"deny","effect":"deny","tool":"Bash","input":{"command":{"command":[["touch"]]}},"reason_code":"x"}]}`)
	for _, tt := range hiddenByContinuation {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(bash, "-c", tt.script)
			cmd.Dir = dir
			cmd.Run() // a line after may fail ("EOF: command not found")
			if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
				t.Fatalf("bash did not run the hidden command: the case does not show what it means to")
			}
			c := call("Bash", jsonString(tt.script))
			if v, traces := allow.Explain(c); v.Effect == api.EffectAllow {
				t.Errorf("%q was allowed", tt.script)
			} else if !strings.Contains(traces[0].Why, tt.why) {
				t.Errorf("explain says %q, want it to say %q", traces[0].Why, tt.why)
			}
			if v := deny.Decide(c); v.Effect != api.EffectDeny {
				t.Errorf("%q slips past a deny of touch: %+v", tt.script, v)
			}
		})
	}
}

// Where bash and the parser join the same lines, nothing changes: a
// continued command, a backslash in a quoted here-document, a here-document
// whose joined lines are no delimiter, a comment with no backslash.
func TestContinuationsBashAndTheMatcherAgreeOn(t *testing.T) {
	allow := mustParse(t, `{"version":1,"default":"ask","rules":[
		{"id":"allow","effect":"allow","tool":"Bash","input":{"command":{"command":[["ls"],["cat"],["echo"],["grep"]]}}}]}`)
	for _, script := range []string{
		"ls -l \\\n  -a",
		"echo a \\\n  b | grep a",
		"ls # a comment\necho b",
		"cat <<'EOF'\nEO\\\nF\nEOF",
		"cat <<\\EOF\nEO\\\nF\nEOF",
		"cat <<EOF\nfoo\\\nEOF\nEOF",
		"cat <<EOF\nplain\nEOF",
	} {
		if v := allow.Decide(call("Bash", jsonString(script))); v.Effect != api.EffectAllow {
			t.Errorf("%q: %s (%s), want allow", script, v.Effect, v.Message)
		}
	}
}

// The guard refuses what it cannot read as bash does, whatever the policy:
// a command hidden on the line after a comment, and a script of several
// lines that does not parse (bash runs its lines up to the error). A
// single line that does not parse runs nothing: the policy decides it
// (an allow never vouches for it).
func TestGuardReadsLinesAsBash(t *testing.T) {
	root := t.TempDir()
	gate := paths.Paths{RuntimeDir: filepath.Join(root, "run", "toolgate"), StateDir: filepath.Join(root, "state", "toolgate")}
	s := NewSession(mustParse(t, `{"version":1,"default":"allow","rules":[]}`), nil, filepath.Join(root, "project"), root)
	s.Guard = NewGuard(GuardPaths{Gate: gate, ConfigDir: filepath.Join(root, "config"), Exe: "/opt/toolgate/bin/toolgate"})
	for _, script := range []string{
		"ls # \\\nrm -rf " + gate.StateDir,
		"cat <<EOF\nEO\\\nF\nrm -rf " + gate.StateDir + "\nEOF",
		"rm -rf " + gate.StateDir + "\n(((",
	} {
		v := s.Evaluate("Bash", []byte(jsonString(script)))
		if v.Effect != api.EffectDeny || v.Source != api.SourceGuard {
			t.Errorf("%q: %s by %s, want the guard's deny", script, v.Effect, v.Source)
		}
	}
	if v := s.Evaluate("Bash", []byte(jsonString("rm -rf x <b>ls</b>"))); v.Source == api.SourceGuard {
		t.Errorf("a line that does not parse, and so runs nothing, was refused by the guard: %+v", v)
	}
}
