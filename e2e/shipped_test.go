package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/examples"
	"github.com/toolgate/toolgate/modelscript"
)

// forProfiles runs test once for each starter policy toolgate policy init
// writes, as a subtest named for its profile.
func forProfiles(t *testing.T, test func(t *testing.T, policy string)) {
	for _, profile := range []string{"laptop", "ci"} {
		t.Run(profile, func(t *testing.T) {
			policy, err := examples.Policies.ReadFile(examples.Profiles[profile])
			if err != nil {
				t.Fatal(err)
			}
			test(t, string(policy))
		})
	}
}

// Through the real CLI and the shipped starter policies, a command hidden
// on the line after a comment that ends in a backslash, or after a
// here-document delimiter bash joins from two lines, does not run: bash
// would run it, and the matcher reads such a script as unknown, so that no
// allow vouches for it.
func TestShippedPoliciesSeeCommandsHiddenByContinuations(t *testing.T) {
	t.Parallel()
	forProfiles(t, func(t *testing.T, policy string) {
		w := newWorld(t)
		r := w.run(runArgs{policy: policy, toolgate: []string{"--on-ask", "deny"}, script: []modelscript.Step{
			step(bash("toolu_cont_comment", "ls # \\\ntouch hidden-comment")),
			step(bash("toolu_cont_heredoc", "cat <<EOF\nEO\\\nF\ntouch hidden-heredoc\nEOF")),
		}})
		for _, id := range []string{"toolu_cont_comment", "toolu_cont_heredoc"} {
			if c := r.call(t, id); c.Effect == "allow" || c.Executed {
				t.Errorf("%s: %s, executed %v: a command bash runs was hidden from the policy", id, c.Effect, c.Executed)
			}
		}
		for _, f := range []string{"hidden-comment", "hidden-heredoc"} {
			if _, err := os.Stat(filepath.Join(w.project, f)); err == nil {
				t.Errorf("%s was made: the hidden command ran", f)
			}
		}
		if r.code != 77 {
			t.Errorf("exit %d, want 77", r.code)
		}
	})
}

// Through the real CLI and the shipped starter policies, an allowed
// program with an option that writes a file is not allowed: git log
// --output would write the shell's rc file, which the next shell runs.
func TestShippedPoliciesRefuseOptionsThatWrite(t *testing.T) {
	t.Parallel()
	forProfiles(t, func(t *testing.T, policy string) {
		w := newWorld(t)
		for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "first"}} {
			git := exec.Command("git", args...)
			git.Dir = w.project
			if out, err := git.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v %s", args, err, out)
			}
		}
		rc := filepath.Join(w.home(), ".bashrc")
		r := w.run(runArgs{policy: policy, toolgate: []string{"--on-ask", "deny"}, script: []modelscript.Step{
			step(bash("toolu_git_output", "git log -1 --format=tformat:touch-pwned --output="+rc)),
			step(bash("toolu_git_read", "git log --oneline -1")),
		}})
		if c := r.call(t, "toolu_git_output"); c.Effect == "allow" || c.Executed {
			t.Errorf("git log --output: %s, executed %v", c.Effect, c.Executed)
		}
		if data, err := os.ReadFile(rc); err == nil {
			t.Errorf("git log wrote the shell's rc file: %q", data)
		}
		if c := r.call(t, "toolu_git_read"); c.Effect != "allow" || !c.Executed {
			t.Errorf("git log --oneline: %s, executed %v; want it allowed and run", c.Effect, c.Executed)
		}
		if r.code != 77 {
			t.Errorf("exit %d, want 77", r.code)
		}
	})
}
