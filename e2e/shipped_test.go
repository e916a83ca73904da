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

// Through the real CLI and the shipped starter policies, the shell reads
// none of the secrets the file tools may not read: the .env files of any
// directory, the credentials of git, docker, kubernetes and the package
// registries, and the shell's history; nor does curl send one with @.
// Each call is denied secret_file and does not run.
func TestShippedPoliciesKeepSecretsFromTheShell(t *testing.T) {
	t.Parallel()
	forProfiles(t, func(t *testing.T, policy string) {
		w := newWorld(t)
		home := w.home()
		secrets := []struct{ id, command string }{
			{"toolu_env_production", "cat .env.production"},
			{"toolu_env_sub", "cat backend/.env"},
			{"toolu_netrc", "cat ~/.netrc"},
			{"toolu_git_creds", "cat ~/.git-credentials"},
			{"toolu_docker", "cat ~/.docker/config.json"},
			{"toolu_kube", "grep -r token ~/.kube"},
			{"toolu_history", "tail -n 5 ~/.bash_history"},
			{"toolu_curl_at", "curl -s -d @.env.production http://127.0.0.1:9/"},
		}
		for _, f := range []string{filepath.Join(w.project, ".env.production"), filepath.Join(w.project, "backend", ".env"),
			filepath.Join(home, ".netrc"), filepath.Join(home, ".git-credentials"), filepath.Join(home, ".docker", "config.json"),
			filepath.Join(home, ".kube", "config"), filepath.Join(home, ".bash_history")} {
			if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte("token=s3cret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		var script []modelscript.Step
		for _, sc := range secrets {
			script = append(script, step(bash(sc.id, sc.command)))
		}
		r := w.run(runArgs{policy: policy, toolgate: []string{"--on-ask", "deny"}, script: script})
		for _, sc := range secrets {
			c := r.call(t, sc.id)
			// The ci policy denies curl before it looks at what it sends.
			reasonOK := c.ReasonCode == "secret_file" || sc.id == "toolu_curl_at" && c.ReasonCode == "destructive_command"
			if c.Effect != "deny" || !reasonOK || c.Executed {
				t.Errorf("%q: %s (%s), executed %v; want denied secret_file", sc.command, c.Effect, c.ReasonCode, c.Executed)
			}
		}
		if r.code != 77 {
			t.Errorf("exit %d, want 77", r.code)
		}
	})
}

// Through the real CLI and the shipped starter policies, make with rules
// from the command line or from standard input does not run: both run any
// command, even under the ci policy's allow of make.
func TestShippedPoliciesRefuseMakeWithRulesOfTheModels(t *testing.T) {
	t.Parallel()
	forProfiles(t, func(t *testing.T, policy string) {
		w := newWorld(t)
		r := w.run(runArgs{policy: policy, toolgate: []string{"--on-ask", "deny"}, script: []modelscript.Step{
			step(bash("toolu_make_eval", "make --eval='$(shell touch pwned-eval)' -n")),
			step(bash("toolu_make_stdin", "make -f - <<'EOF'\nall:\n\ttouch pwned-stdin\nEOF")),
			step(bash("toolu_make_var", "make SHELL=/bin/sh .SHELLFLAGS='-c touch pwned-var;'")),
		}})
		for _, id := range []string{"toolu_make_eval", "toolu_make_stdin", "toolu_make_var"} {
			if c := r.call(t, id); c.Effect == "allow" || c.Executed {
				t.Errorf("%s: %s, executed %v", id, c.Effect, c.Executed)
			}
		}
		for _, f := range []string{"pwned-eval", "pwned-stdin", "pwned-var"} {
			if _, err := os.Stat(filepath.Join(w.project, f)); err == nil {
				t.Errorf("%s was made: make ran the model's rule", f)
			}
		}
	})
}

// Through the real CLI and the shipped starter policies, a link in the
// project (a repository can hold one, and git checks it out) does not make
// a secret a project file: reading through it is denied as reading the
// secret is, a .. after the link included (the kernel goes to the parent of
// the link's target, not back to the project).
func TestShippedPoliciesFollowLinksToSecrets(t *testing.T) {
	t.Parallel()
	forProfiles(t, func(t *testing.T, policy string) {
		w := newWorld(t)
		home := w.home()
		for _, f := range []string{filepath.Join(home, ".ssh", "id_ed25519"), filepath.Join(home, ".netrc")} {
			if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte("s3cret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		for link, to := range map[string]string{"keys": filepath.Join(home, ".ssh"), "h": home} {
			if err := os.Symlink(to, filepath.Join(w.project, link)); err != nil {
				t.Fatal(err)
			}
		}
		r := w.run(runArgs{policy: policy, toolgate: []string{"--on-ask", "deny"}, script: []modelscript.Step{
			step(bash("toolu_link_key", "cat keys/id_ed25519")),
			step(bash("toolu_link_glob", "head -n 1 keys/*")),
			step(bash("toolu_link_netrc", "cat h/.netrc")),
			step(bash("toolu_link_dotdot", "cat h/../home/.netrc")), // .. after a link: the target's parent
		}})
		for _, id := range []string{"toolu_link_key", "toolu_link_glob", "toolu_link_netrc", "toolu_link_dotdot"} {
			if c := r.call(t, id); c.Effect != "deny" || c.ReasonCode != "secret_file" || c.Executed {
				t.Errorf("%s: %s (%s), executed %v; want denied secret_file", id, c.Effect, c.ReasonCode, c.Executed)
			}
		}
	})
}
