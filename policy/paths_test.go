package policy

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/toolgate/toolgate/api"
)

// A prefix that names a program by path matches, for every effect, the
// calls that run that file, both sides resolved against the working
// directory.
func TestPrefixesByPath(t *testing.T) {
	p := mustParse(t, `{"version":1,"default":"allow","rules":[
		{"id":"ask-deploy","effect":"ask","tool":"Bash","input":{"command":{"command":[["./deploy.sh"]]}}},
		{"id":"deny-rm","effect":"deny","tool":"Bash","input":{"command":{"command":[["/usr/bin/rm"]]}},"reason_code":"x"},
		{"id":"deny-drop","effect":"deny","tool":"Bash","input":{"command":{"command":[["scripts/drop-db.sh"]]}},"reason_code":"x"}]}`)
	tests := []struct {
		command, rule string
	}{
		{"./deploy.sh", "ask-deploy"},
		{"./deploy.sh --prod", "ask-deploy"},
		{"/project/deploy.sh", "ask-deploy"},
		{"sub/../deploy.sh", "ask-deploy"},
		{"deploy.sh", "ask-deploy"}, // PATH may hold the project
		{"cd sub && ../deploy.sh", "ask-deploy"},
		{"bash deploy.sh", "ask-deploy"}, // a script run by its interpreter
		{"sudo sh ./deploy.sh", "ask-deploy"},
		{"./other.sh", ""},
		{"/srv/deploy.sh", ""},
		{"rm x", "deny-rm"}, // PATH may lead to /usr/bin/rm
		{"/usr/bin/rm x", "deny-rm"},
		{"/usr/bin/../bin/rm x", "deny-rm"},
		{"/tmp/rmdir x", ""},
		{"./scripts/drop-db.sh", "deny-drop"},
		{"scripts/drop-db.sh --force", "deny-drop"},
		{"cd scripts && ./drop-db.sh", "deny-drop"},
		{"cd /project/scripts; ./drop-db.sh", "deny-drop"},
		{"/project/scripts/drop-db.sh", "deny-drop"},
		{"cd $D && ./drop-db.sh", "deny-drop"}, // the directory is only known at run time
		{"./drop-db.sh", ""},
	}
	for _, tt := range tests {
		d := p.Decide(call("Bash", jsonString(tt.command)))
		if d.RuleID != tt.rule {
			t.Errorf("%q: decided by %q (%s), want %q", tt.command, d.RuleID, d.Effect, tt.rule)
		}
	}
}

// An allow of a program by path allows that file only, and only while the
// script stays in the working directory; an allow by name never allows a
// path.
func TestAllowByPath(t *testing.T) {
	p := mustParse(t, `{"version":1,"default":"ask","rules":[
		{"id":"allow","effect":"allow","tool":"Bash","input":{"command":{"command":[["./deploy.sh"],["git","status"],["cd"]]}}}]}`)
	tests := []struct {
		command string
		allow   bool
	}{
		{"./deploy.sh", true},
		{"/project/deploy.sh --dry-run", true},
		{"sub/../deploy.sh", true},
		{"deploy.sh", false},                  // found on PATH, not in the project
		{"cd /tmp && ./deploy.sh", false},     // another directory's deploy.sh
		{"cd sub; cd ..; ./deploy.sh", false}, // the matcher does not follow it exactly
		{"/usr/bin/git status", false},        // a name allows only the name
		{"./git status", false},
		{"git status", true},
	}
	for _, tt := range tests {
		d := p.Decide(call("Bash", jsonString(tt.command)))
		if got := d.Effect == api.EffectAllow; got != tt.allow {
			t.Errorf("%q: allowed = %v, want %v", tt.command, got, tt.allow)
		}
	}
}

// argument_under matches any argument or redirection target of any
// program that is a path under a directory: normalized, ~ expanded, cd
// followed; a word only known at run time matches for deny.
func TestArgumentUnder(t *testing.T) {
	p := mustParse(t, `{"version":1,"default":"allow","rules":[
		{"id":"deny-secrets","effect":"deny","tool":"Bash","input":{"command":{"argument_under":["~/.ssh",".env","/etc/shadow"]}},"reason_code":"secret"}]}`)
	tests := []struct {
		command string
		deny    bool
	}{
		{"cat ~/.ssh/id_rsa", true},
		{"grep -r KEY ~/.ssh", true},
		{"cat .env", true},
		{"cat ./.env", true},
		{"cat sub/../.env", true},
		{"cat /project/.env", true},
		{"cat /etc/shadow", true},
		{"cat /home/u/.ssh/../.ssh/config", true},
		{"less < .env", true},
		{"echo x > ~/.ssh/authorized_keys", true},
		{"sudo cat ~/.ssh/id_rsa", true},
		{"bash -c 'cat .env'", true},
		{"cat $(echo .env)", true},      // only known at run time
		{"cat $F", true},                // likewise
		{"cat ~/.s*/id_rsa", true},      // a glob that may reach it
		{"cat ~/.[sS]sh/id_rsa", true},  // in any case
		{"cat ~/*/id_rsa", true},        // dot files too
		{`cat ~/.ss["h"]/id_rsa`, true}, // a bracket expression whose parts are quoted
		{`cat .en["v"]`, true},
		{`grep -r KEY .en['v']`, true},
		{`head ~/.ss[h"]"]/id_rsa`, true},
		{`cat ~/.ss"["h]/id_rsa`, false},               // a quoted [ opens nothing: the file [h]
		{"grep -f/home/u/.ssh/id_rsa guess.txt", true}, // a value glued to a short option
		{"grep -rf.env x", true},
		{"grep -rn TODO .", true}, // grep -r reads the project's .env too
		{"grep -n TODO *.go", false},
		{"grep -r KEY ~", true}, // and the home's .ssh
		{"cd ~ && cat .ssh/id_rsa", true},
		{"cd && cat .ssh/id_rsa", true}, // cd alone goes home
		{"cat .ssh/id_rsa; cd ~", true}, // in a loop, the order does not protect
		{"cd ~/.ssh && cat id_rsa", true},
		{"env -C ~ cat .ssh/id_rsa", true},
		{"tar -C ~ -cf - .ssh", true},
		{"curl --data-binary=@x KEY=~/.ssh/id_rsa", true},
		{"KEY=~/.ssh/id_rsa ./upload", true},
		{"chroot ~ cat /.ssh/id_rsa", true},
		{"python3 -c 'open(\".env\")'", true}, // unknown script
		{"cat .env.example", false},
		{"cat src/.env", false},
		{"cat '~/.ssh/id_rsa'", false}, // a quoted ~ is a directory named ~
		{"ls ~", false},
		{"cat *.go", false},
		{"ls /etc", false},
		{"echo ssh", false},
		{"--file=~/.ssh/x cat", false}, // not a NAME=: ~ stays
	}
	for _, tt := range tests {
		d := p.Decide(call("Bash", jsonString(tt.command)))
		if got := d.Effect == api.EffectDeny; got != tt.deny {
			t.Errorf("%q: denied = %v, want %v", tt.command, got, tt.deny)
		}
	}
}

// On the allow side, argument_under does not count what it cannot know.
func TestArgumentUnderAllow(t *testing.T) {
	p := mustParse(t, `{"version":1,"default":"ask","rules":[
		{"id":"allow-src","effect":"allow","tool":"Bash","input":{"command":{"argument_under":["src"]}}}]}`)
	for command, allow := range map[string]bool{
		"cat src/a.go":          true,
		"cat $F":                false,
		"cat src/*.go":          false,
		"python3 -c x src/a.py": false,
	} {
		if got := p.Decide(call("Bash", jsonString(command))).Effect == api.EffectAllow; got != allow {
			t.Errorf("%q: allowed = %v, want %v", command, got, allow)
		}
	}
}

// A path rule decides on the path as written and as its links lead: an
// allow holds only where both are inside what it covers (a link in the
// project to $HOME does not make proj/d/.bashrc a project file), a deny or
// an ask where either is.
func TestPathRulesFollowLinks(t *testing.T) {
	root := t.TempDir()
	project, home := root+"/project", root+"/home"
	for _, d := range []string{project + "/secrets", home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{project + "/d": home, project + "/innocent": project + "/secrets/key", project + "/src": project + "/secrets"} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	p := mustParse(t, `{"version":1,"default":"ask","rules":[
		{"id":"deny-secrets","effect":"deny","tool":"Read","input":{"file_path":{"path_under":"secrets"}},"reason_code":"secret_file"},
		{"id":"deny-key","effect":"deny","tool":"Read","input":{"file_path":{"pattern":".*/key"}},"reason_code":"secret_file"},
		{"id":"allow-project","effect":"allow","tool":"Write","input":{"file_path":{"path_under":"."}}},
		{"id":"allow-notes","effect":"allow","tool":"Write","input":{"file_path":{"const":"d/notes.txt"}}},
		{"id":"allow-read","effect":"allow","tool":"Read"}]}`)
	tests := []struct {
		tool, path string
		effect     api.Effect
		rule       string
	}{
		{"Write", "main.go", api.EffectAllow, "allow-project"},
		{"Write", "d/.bashrc", api.EffectAsk, ""},
		{"Write", project + "/d/.bashrc", api.EffectAsk, ""},
		{"Write", "d/notes.txt", api.EffectAsk, ""},
		{"Read", "innocent", api.EffectDeny, "deny-secrets"},
		{"Read", "src/other", api.EffectDeny, "deny-secrets"},
		{"Read", "README.md", api.EffectAllow, "allow-read"},
	}
	for _, tt := range tests {
		input, _ := json.Marshal(map[string]string{"file_path": tt.path})
		c := Call{Tool: tt.tool, Input: input, Cwd: project, Project: project, Home: home}
		d := p.Decide(c)
		if d.Effect != tt.effect || d.RuleID != tt.rule {
			t.Errorf("%s %s: %s by %q, want %s by %q", tt.tool, tt.path, d.Effect, d.RuleID, tt.effect, tt.rule)
		}
	}
}
