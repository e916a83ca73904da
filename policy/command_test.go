package policy

import (
	"testing"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/policy/bash"
)

func bashPolicy(t testing.TB) *Policy {
	return mustParse(t, `{"version":1,"default":"ask","rules":[
		{"id":"deny-rm","effect":"deny","tool":"Bash","input":{"command":{"command":[["rm"]]}},"reason_code":"rm"},
		{"id":"deny-push","effect":"deny","tool":"Bash","input":{"command":{"command":[["git","push"]]}},"reason_code":"push"},
		{"id":"allow-status","effect":"allow","tool":"Bash","input":{"command":{"command":[["git","status"],["ls"],["echo"]]}}}]}`)
}

func TestCommandAllowDoesNotCoverChains(t *testing.T) {
	p := mustParse(t, `{"version":1,"default":"ask","rules":[
		{"id":"allow-status","effect":"allow","tool":"Bash","input":{"command":{"command":[["git","status"]]}}}]}`)
	tests := []struct {
		command string
		allow   bool
	}{
		{"git status", true},
		{"git status --short", true},
		{"git  status   # comment", true},
		{"git status && git status", true},
		{"'git' \"status\"", true},
		{"git status && rm -rf /", false},
		{"git status; curl x | sh", false},
		{"git status $(rm -rf /)", false},
		{"$(rm -rf /)", false},
		{"git status `rm -rf /`", false},
		{"bash -c 'rm -rf /'", false},
		{"bash -c 'git status'", false}, // the bash itself is not allowed
		{"git status > ~/.bashrc", false},
		{"git status >> /etc/passwd", false},
		{"git status > /dev/null 2>&1", true},
		{"git status | tee out.txt", false},
		{"PATH=/tmp/evil git status", false},
		{"export PATH=/tmp; git status", false},
		{"X=1; git status", false},
		{"$GIT status", false},
		{"g* status", false},
		{"{git,status}", false},
		{"/usr/bin/git status", false}, // allow matches as written
		{"git status (", false},        // does not parse
		{"", false},
		{"(git status)", true},
		{"f() { rm -rf /; }; git status", false},
		{"git status <(rm -rf /)", false},
		{"git stat\\\nus", true}, // a line continuation inside a word
		{"if git status; then rm x; fi", false},
		{"for f in a; do git status; done", true},
	}
	for _, tt := range tests {
		d := p.Decide(call("Bash", jsonString(tt.command)))
		if got := d.Effect == api.EffectAllow; got != tt.allow {
			t.Errorf("%q: allowed = %v, want %v (%s)", tt.command, got, tt.allow, d.RuleID)
		}
	}
}

func TestCommandDenyLooksThroughWrappers(t *testing.T) {
	p := bashPolicy(t)
	tests := []struct {
		command string
		rule    string // "" when no deny rule should match
	}{
		{"rm -rf /", "deny-rm"},
		{"/bin/rm -rf /", "deny-rm"},
		{"command rm x", "deny-rm"},
		{"builtin command rm x", "deny-rm"},
		{"xargs rm < list", "deny-rm"},
		{"find . -name '*.o' | xargs -0 -n 1 rm -f", "deny-rm"},
		{"sudo rm x", "deny-rm"},
		{"sudo -u root -- rm x", "deny-rm"},
		{"sudo --user=root rm x", "deny-rm"},
		{"sudo --user root rm x", "deny-rm"},
		{"env -i FOO=bar rm x", "deny-rm"},
		{"nice -n 10 ionice -c 3 rm x", "deny-rm"},
		{"timeout 5 rm x", "deny-rm"},
		{"nohup rm x &", "deny-rm"},
		{"exec rm x", "deny-rm"},
		{"time rm x", "deny-rm"},
		{"setsid rm x", "deny-rm"},
		{"doas rm x", "deny-rm"},
		{"stdbuf -o0 rm x", "deny-rm"},
		{"flock /tmp/l rm x", "deny-rm"},
		{"r\\m x", "deny-rm"},
		{"'r'm x", "deny-rm"},
		{"\"rm\" x", "deny-rm"},
		{"ls && rm x", "deny-rm"},
		{"ls; rm x", "deny-rm"},
		{"ls || rm x", "deny-rm"},
		{"ls | rm x", "deny-rm"},
		{"(rm x)", "deny-rm"},
		{"{ rm x; }", "deny-rm"},
		{"echo $(rm x)", "deny-rm"},
		{"echo `rm x`", "deny-rm"},
		{"echo \"$(rm x)\"", "deny-rm"},
		{"bash -c 'rm -rf /'", "deny-rm"},
		{"sh -ec 'ls; rm x'", "deny-rm"},
		{"bash -o pipefail -c 'rm x'", "deny-rm"},
		{"bash -c \"bash -c 'rm x'\"", "deny-rm"},
		{"sudo bash -c 'rm x'", "deny-rm"},
		{"eval rm x", "deny-rm"},
		{"eval 'ls; rm x'", "deny-rm"},
		{"find . -exec rm {} \\;", "deny-rm"},
		{"$CMD x", "deny-rm"},         // unknown program: could be rm
		{"r* x", "deny-rm"},           // a glob could expand to rm
		{"{rm,x}", "deny-rm"},         // brace expansion
		{"bash -c \"$S\"", "deny-rm"}, // a script only known at run time
		{"ls (", "deny-rm"},           // does not parse
		{"git push origin main", "deny-push"},
		{"git $X main", "deny-rm"},     // $X could be -c alias.main=!rm: anything
		{"git \"$X\" main", "deny-rm"}, // --exec-path=DIR: anything
		{"git push$X", "deny-push"},    // push$X is not push, but $X may add words
		{"X='git push'; $X", "deny-rm"},
		{"cd sub && git push", "deny-push"},
		{"echo rm", ""},
		{"ls -la", ""},
		{"git status", ""},
		{"rmdir x", ""},
		{"grep -r 'rm -rf' .", ""},
		{"[ -n \"$x\" ] && ls", ""}, // [ is the test command, not a glob
		{"[[ -f x ]] && ls", ""},
		{"/bin/r[m] x", "deny-rm"}, // a bracket expression could expand to rm
		{"l* x", ""},               // l* cannot expand to rm
		{"git p* origin", "deny-push"},
		{"git s* origin", ""},
		{"{r\"m\",x}", "deny-rm"}, // brace expansion across quotes
		{"git -C sub push", "deny-push"},
		{"git --git-dir=.git --no-pager push", "deny-push"},
		{"xargs -i rm {}", "deny-rm"},
		{"/usr/bin/time -o t.txt rm x", "deny-rm"},
		{"sudo -D /tmp rm x", "deny-rm"},
		{"sudo --preserve-env=PATH rm x", "deny-rm"},
		{"setpriv --reuid 1000 rm x", "deny-rm"},
		{"unknown-wrapper --with-value v rm", ""},
		{"command -v rm", ""}, // a lookup runs nothing
		{"bash deploy.sh && rm.sh", ""},
		{"echo $((1 + 2)) $HOME", ""},
	}
	for _, tt := range tests {
		d := p.Decide(call("Bash", jsonString(tt.command)))
		got := ""
		if d.Effect == api.EffectDeny {
			got = d.RuleID
		}
		if got != tt.rule {
			t.Errorf("%q: denied by %q, want %q", tt.command, got, tt.rule)
		}
	}
}

func TestCommandOnNonString(t *testing.T) {
	p := bashPolicy(t)
	for _, input := range []string{`{}`, `{"command":1}`, `{"command":["rm"]}`} {
		if d := p.Decide(call("Bash", input)); d.Effect != api.EffectAsk || d.RuleID != "" {
			t.Errorf("%s: got %+v, want the default", input, d)
		}
	}
}

func TestNestingIsBounded(t *testing.T) {
	cmd := "ls"
	for range bash.MaxNesting + 2 {
		cmd = "bash -c " + shellQuote(cmd)
	}
	p := bashPolicy(t)
	if d := p.Decide(call("Bash", jsonString(cmd))); d.Effect != api.EffectDeny {
		t.Errorf("too deep a nesting must not be understood; got %+v", d)
	}
}

func shellQuote(s string) string {
	out := "'"
	for _, c := range s {
		if c == '\'' {
			out += `'\''`
			continue
		}
		out += string(c)
	}
	return out + "'"
}

func jsonString(command string) string {
	b, _ := jsonMarshal(map[string]string{"command": command})
	return string(b)
}
