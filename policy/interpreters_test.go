package policy

import (
	"testing"

	"github.com/toolgate/toolgate/api"
)

// interpreterPolicies allow every interpreter and wrapper, and what the
// scripts below run, except rm; the deny policy denies rm and git push.
func interpreterPolicies(t *testing.T) (allow, deny *Policy) {
	allow = mustParse(t, `{"version":1,"default":"ask","rules":[
		{"id":"allow","effect":"allow","tool":"Bash","input":{"command":{"command":[["ls"],["cat"],["echo"],
		 ["sh"],["bash"],["dash"],["zsh"],["ksh"],["fish"],["python3"],["perl"],["ruby"],["node"],["php"],["lua"],["awk"],
		 ["env"],["flock"],["find"],["xargs"],["eval"],["su"],["runuser"],["setpriv"],["unshare"],["chroot"],
		 ["nsenter"],["systemd-run"],["script"],["watch"],["strace"],["busybox"],["git"],["sudo"],["doas"],["jobs"],
		 ["command"],["compgen"],["fc"],["parallel"]]}}}]}`)
	deny = mustParse(t, `{"version":1,"default":"allow","rules":[
		{"id":"deny","effect":"deny","tool":"Bash","input":{"command":{"command":[["rm"],["git","push"]]}},"reason_code":"x"}]}`)
	return allow, deny
}

// What an interpreter or a wrapper runs is either looked into or unknown:
// a deny of rm (or of git push) matches, and an allow that lists the
// interpreter or wrapper itself misses.
func TestInterpretersAndWrappers(t *testing.T) {
	allow, deny := interpreterPolicies(t)
	for _, script := range []string{
		// shells: looked into, or unknown when the script is hidden
		"sh -c 'rm x'",
		"bash -c -- 'rm x'",
		"bash -c -x 'rm x'",
		"bash --rcfile x -c ls",
		"bash --init-file x -c ls",
		"bash -O extglob -c ls",
		"bash -s <<< ls",
		"bash <<< 'rm -rf x'",
		"bash <<'EOF'\nrm -rf x\nEOF",
		"echo rm -rf x | sh",
		"sh < script.sh",
		"dash -c 'rm x'",
		"zsh -c ls",
		"ksh -c ls",
		"fish -c ls",
		"bash -c \"$S\"",
		// other interpreters: an inline script or standard input is unknown
		"python3 -c 'import os'",
		"python3 - <<< 'import os'",
		"python3",
		"perl -e 'unlink q(x)'",
		"ruby -e 'File.delete(1)'",
		"node -e 'process.exit()'",
		"php -r 'unlink(1);'",
		"lua -e 'os.remove(1)'",
		"awk 'BEGIN { system(\"rm x\") }'",
		"awk '{ print | \"sh\" }' f",
		// wrappers and programs that run commands
		"env -S 'rm -rf x'",
		"env --split-string='rm x'",
		"env -iS'rm x'",
		"flock /tmp/l -c 'rm x'",
		"find . -exec sh -c 'rm x' \\;",
		"find . -name '*.sh' -exec sh {} \\;",
		"find . -exec {} \\;",
		"xargs sh -c 'rm $1' _",
		"xargs sh",
		"xargs -I{} sh -c '{}'",
		"eval \"$CMD\"",
		"eval 'rm x'",
		"su -c 'rm x'",
		"su",
		"runuser -u bob -- rm x",
		"runuser bob -c 'rm x'",
		"setpriv --reuid=1000 rm x",
		"unshare -r rm x",
		"unshare -r",
		"chroot /srv rm x",
		"nsenter -t 1 -m rm x",
		"systemd-run --user --unit x rm x",
		"systemd-run --shell",
		"script -c 'rm x'",
		"watch -n1 'rm x'",
		"watch -x rm x",
		"strace -f -o /dev/null rm x",
		"busybox rm x",
		"busybox sh -c 'rm x'",
		"git -c alias.x='!rm -rf y' x",
		"git -c alias.p=push p",
		"git -c core.pager='rm x' log",
		"git --exec-path=/tmp/evil status",
		"sudo -s 'rm x'",
		"sudo -u root -- sh -c 'rm x'",
		"doas -s",
		"jobs -x rm x",
		"compgen -C 'rm x' y",
		"fc -s ls",
		"parallel rm ::: x",
	} {
		c := call("Bash", jsonString(script))
		if d := deny.Decide(c); d.Effect != api.EffectDeny {
			t.Errorf("%q slips past a deny of rm and git push", script)
		}
		if v, traces := allow.Explain(c); v.Effect == api.EffectAllow {
			t.Errorf("%q was allowed", script)
		} else if traces[0].Why == "" {
			t.Errorf("%q: explain gives no reason", script)
		}
	}
}

// Interpreters and wrappers whose commands are all visible and allowed
// stay allowed; script files run by an interpreter are not looked into.
func TestInterpretersThatStayAllowed(t *testing.T) {
	allow, deny := interpreterPolicies(t)
	for _, script := range []string{
		"sh -c 'ls; echo hi'",
		"bash -eo pipefail -c 'ls | cat'",
		"bash <<< 'ls'",
		"python3 -u script.py",
		"python3 -m pytest",
		"awk '{ print $1 }' f",
		"env FOO=bar ls",
		"sudo -u bob ls",
		"find . -name '*.go' -exec cat {} +",
		"xargs ls",
		"eval 'echo hi'",
		"watch -n 2 ls",
		"git status",
		"command -v ls",
	} {
		c := call("Bash", jsonString(script))
		if v, traces := allow.Explain(c); v.Effect != api.EffectAllow {
			t.Errorf("%q: %s", script, traces[0].Why)
		}
		if d := deny.Decide(c); d.Effect == api.EffectDeny {
			t.Errorf("%q: denied by a deny of rm and git push", script)
		}
	}
}

// Found by the differential fuzzer: bash runs the program time after a
// pipe (the keyword only starts a pipeline), and a wrapper's options end
// with its operands (timeout 1 -a runs "-a").
func TestWhatBashRunsAfterAPipeOrOperands(t *testing.T) {
	p := mustParse(t, `{"version":1,"default":"ask","rules":[
		{"id":"deny-rm","effect":"deny","tool":"Bash","reason_code":"x","input":{"command":{"command":[["rm"]]}}},
		{"id":"allow","effect":"allow","tool":"Bash","input":{"command":{"command":[["ls"],["exit"],["timeout"],["env"]]}}}]}`)
	for command, want := range map[string]api.Effect{
		"ls | time exit":  api.EffectAsk, // the program time, which is not allowed
		"time ls | ls":    api.EffectAllow,
		"ls | ! time ls":  api.EffectDeny, // mvdan does not parse it: unknown
		"ls | time rm x":  api.EffectDeny,
		"timeout 1 -a":    api.EffectAsk, // runs the program -a
		"timeout 1 ls -a": api.EffectAllow,
		"env X=1 -i":      api.EffectAsk, // runs the program -i
		"env -i X=1 ls":   api.EffectAllow,
		"ls \x00; rm x":   api.EffectDeny,
	} {
		if d := p.Decide(call("Bash", jsonString(command))); d.Effect != want {
			t.Errorf("%q: %s, want %s", command, d.Effect, want)
		}
	}
}
