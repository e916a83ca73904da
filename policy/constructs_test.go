package policy

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/api"
)

// constructPolicies allow every program the constructs below use, so that
// an allow miss is the construct's doing; the deny policy denies rm.
func constructPolicies(t *testing.T) (allow, deny *Policy) {
	allow = mustParse(t, `{"version":1,"default":"ask","rules":[
		{"id":"allow","effect":"allow","tool":"Bash","input":{"command":{"command":[["ls"],["cat"],["echo"],["rm"],
		 ["sh"],["bash"],["dash"],["zsh"],["ksh"],["fish"],["python3"],["perl"],["ruby"],["node"],["php"],["lua"],["awk"],
		 ["env"],["flock"],["find"],["xargs"],["eval"],["su"],["runuser"],["setpriv"],["unshare"],["chroot"],
		 ["nsenter"],["systemd-run"],["script"],["watch"],["strace"],["busybox"],["git"],["sudo"],["jobs"],
		 ["printf"],["test"],["["],["exec"],["command"]]}}}]}`)
	deny = mustParse(t, `{"version":1,"default":"allow","rules":[
		{"id":"deny","effect":"deny","tool":"Bash","input":{"command":{"command":[["rm"],["cat"],["git","push"]]}},"reason_code":"x"}]}`)
	return allow, deny
}

// Every construct the allow side does not fully understand makes an allow
// miss and says why; the deny side still sees, or assumes, what it runs.
func TestConstructsAllowMissesDenyMatches(t *testing.T) {
	allow, deny := constructPolicies(t)
	tests := []struct {
		construct, script, why string
	}{
		{"let", "ls; let 'a[$(rm -rf x)]=1'", "`let` evaluates arithmetic that can run commands"},
		{"(( ))", "(( 'a[$(rm x)]' ))", "`(( ))` evaluates arithmetic"},
		{"[[ ]]", "ls; [[ 'a[$(rm x)]' -eq 0 ]]", "`[[ ]]` can evaluate arithmetic"},
		{"arithmetic expansion", "echo $(( 'a[$(rm x)]' ))", "arithmetic expansion $(( 'a[$(rm x)]' )) can run commands"},
		{"arithmetic on a variable the script set", "x='a[$(rm y)]'; echo $((x))", "assignment x="},
		{"C-style for", "for ((i=0; i < 'a[$(rm x)]'; i++)); do ls; done", "C-style for loop"},
		{"here-doc into a file", "cat <<EOF > notes.txt\nhello\nEOF", "redirection writes to notes.txt"},
		{"here-string into a file", "cat <<< hello >> notes.txt", "redirection writes to notes.txt"},
		{">&FILE after a here-doc", "cat <<EOF >&/any/file\nhello\nEOF", "redirection writes to /any/file"},
		{"N>&FILE", "cat x 1>&/f", "redirection writes to /f"},
		{"&> a file", "cat x &> out.txt", "redirection writes to out.txt"},
		{"coproc", "coproc rm x", "`coproc`"},
		{"function definition", "f() { rm x; }; f", "a function definition"},
		{"alias", "alias q='rm -rf'\nq x", "`alias` changes what later commands mean"},
		{"trap", "trap 'rm -rf x' EXIT", "`trap` sets a script to run later"},
		{"source of a process substitution", "source <(echo rm x)", "only known at run time"},
		{". of standard input", "echo 'rm x' | . /dev/stdin", "`.` runs a file in this shell"},
		{"exec with redirections", "exec > out.txt; rm x", "redirection writes to out.txt"},
		{"exec of descriptors", "exec 3>&1; rm x", "`exec` without a command"},
		{"a word only known at run time", "echo $X; rm x", "word $X is only known at run time"},
		{"an assignment", "PATH=/tmp/evil ls; rm x", "assignment PATH=/tmp/evil"},
		{"a {var} redirection", "ls {fd}>/dev/null; rm x", "redirection {fd} assigns a variable"},
		{"select", "select x in a b; do rm $x; done", "`select`"},
		{"${x@P}", "y='$(rm x)'; echo ${y@P}", "assignment y="},
		{"${!x}", "echo ${!x}; x='a[$(rm y)]'", "expansion ${!x} can run code"},
		{"a network redirection", "cat < /dev/tcp/example.com/80; rm x", "opens a network connection"},
		{"declare", "declare -i n; n='a[$(rm x)]'", "`declare` sets shell variables"},
		{"printf -v", "printf -v 'a[$(rm x)]' y", "`printf -v` names a variable"},
		{"test -v", "[ -v 'a[$(rm x)]' ]", "`[ -v` names a variable"},
		{"read", "read 'a[$(rm x)]' <<< y", "`read` sets shell variables"},
		{"hash -p", "hash -p /bin/rm ls; ls x", "`hash` changes what the shell runs"},
		{"enable -f", "enable -f ./evil.so ls; rm x", "`enable` changes what the shell runs"},
		{"mapfile -C", "mapfile -C 'rm x' -c 1 arr < list", "`mapfile` sets shell variables"},
		{"PS4", "PS4='$(rm x) ' bash -xc ls", "assignment PS4="},
	}
	for _, tt := range tests {
		c := call("Bash", jsonString(tt.script))
		v, traces := allow.Explain(c)
		if v.Effect == api.EffectAllow {
			t.Errorf("%s: %q was allowed", tt.construct, tt.script)
		} else if !strings.Contains(traces[0].Why, tt.why) {
			t.Errorf("%s: explain says %q, want it to say %q", tt.construct, traces[0].Why, tt.why)
		}
		if d := deny.Decide(c); d.Effect != api.EffectDeny {
			t.Errorf("%s: %q slips past a deny of rm: %+v", tt.construct, tt.script, d)
		}
	}
}

// policy explain says why an allow missed.
func TestExplainAllowMiss(t *testing.T) {
	p := mustParse(t, `{"version":1,"default":"ask","rules":[
		{"id":"allow-shell","effect":"allow","tool":"Bash","input":{"command":{"command":[["ls"],["echo"],["cat"]]}}},
		{"id":"deny-rm","effect":"deny","tool":"Bash","reason_code":"x","input":{"command":{"command":[["rm"]]}}}]}`)
	tests := []struct{ command, rule, why string }{
		{"echo hi > out.txt", "allow-shell", "input.command: redirection writes to out.txt"},
		{"echo $X", "allow-shell", "input.command: word $X is only known at run time"},
		{"let n=1+2", "allow-shell", "input.command: `let` evaluates arithmetic that can run commands"},
		{"sudo ls", "allow-shell", "input.command: `sudo ls` matches no allowed prefix"},
		{"xargs ls", "allow-shell", "`xargs ls` matches no allowed prefix"},
		{"python3 -c x", "deny-rm", "match; input.command: the script may run what the matcher cannot see: python3 -c runs code"},
		{"ls && sudo rm x", "deny-rm", "input.command: `rm x` matches"},
	}
	for _, tt := range tests {
		_, traces := p.Explain(call("Bash", jsonString(tt.command)))
		found := false
		for _, tr := range traces {
			if tr.RuleID == tt.rule {
				found = true
				if !strings.Contains(tr.Why, tt.why) {
					t.Errorf("%q: %s: %q, want it to say %q", tt.command, tt.rule, tr.Why, tt.why)
				}
			}
		}
		if !found {
			t.Errorf("%q: no trace of %s", tt.command, tt.rule)
		}
	}
}

// Taking a variable from a command's output and testing it is common
// and is not unknown; a test word that may become -v NAME is, once the
// script sets variables.
func TestTestOperandsAndVariables(t *testing.T) {
	_, deny := constructPolicies(t)
	for script, denied := range map[string]bool{
		`id=$(ls | head -n 1); if [ -n "$id" ]; then echo "$id"; fi`: false,
		`x=$(ls); [ "$x" = a ] && [ "$x" != b ] && test -z "$x"`:     false,
		`for f in *.txt; do [ -f "$f" ] && echo "$f"; done`:          false,
		`x=$(ls); [ "$x" ]`:               false,
		`x=$(ls); [ -n $x ]`:              true,  // $x may be "a -o -v b[$(rm y)]"
		`x=$(ls); y=$(ls); [ "$x" "$y" ]`: true,  // "$x" may be -v
		`[ -n $x ]`:                       false, // nothing in the script sets x
	} {
		if got := deny.Decide(call("Bash", jsonString(script))).Effect == api.EffectDeny; got != denied {
			t.Errorf("%q: denied = %v, want %v", script, got, denied)
		}
	}
}
