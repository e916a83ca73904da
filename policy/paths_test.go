package policy

import (
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
