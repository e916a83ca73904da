package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/examples"
	"github.com/toolgate/toolgate/modelscript"
)

// Through the real CLI and the shipped starter policies, a command hidden
// on the line after a comment that ends in a backslash, or after a
// here-document delimiter bash joins from two lines, does not run: bash
// would run it, and the matcher reads such a script as unknown, so that no
// allow vouches for it.
func TestShippedPoliciesSeeCommandsHiddenByContinuations(t *testing.T) {
	t.Parallel()
	for _, profile := range []string{"laptop", "ci"} {
		t.Run(profile, func(t *testing.T) {
			policy, err := examples.Policies.ReadFile(examples.Profiles[profile])
			if err != nil {
				t.Fatal(err)
			}
			w := newWorld(t)
			r := w.run(runArgs{policy: string(policy), toolgate: []string{"--on-ask", "deny"}, script: []modelscript.Step{
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
}
