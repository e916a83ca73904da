package policy

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/examples"
)

// shipped loads one of the starter policies toolgate policy init writes.
func shipped(t *testing.T, profile string) *Policy {
	t.Helper()
	data, err := examples.Policies.ReadFile(examples.Profiles[profile])
	if err != nil {
		t.Fatal(err)
	}
	return mustParse(t, string(data))
}

// The shipped policies allow git log, git diff, go test, rg and grep with
// the options that only read and print: an option that writes a file,
// runs a program or reads one it is not given makes the allow miss (an
// abbreviation of one too), and policy explain names the option. The
// options people use every day stay allowed.
func TestAllowedProgramsOnlyWithSafeOptions(t *testing.T) {
	for _, profile := range []string{"laptop", "ci"} {
		p := shipped(t, profile)
		for _, tt := range []struct{ command, option string }{
			{"git log -1 --format=tformat:x --output=/home/u/.bashrc", "--output=/home/u/.bashrc"},
			{"git log --outp=.git/config", "--outp=.git/config"},
			{"git diff --output=data.db", "--output=data.db"},
			{"git diff --ext-diff", "--ext-diff"},
			{"git diff --textconv HEAD", "--textconv"},
			{"git log --show-signature", "--show-signature"},
			{"git diff --no-index /etc/hostname x", "--no-index"},
			{"go test -exec sh ./...", "-exec"},
			{"go test -exec=sh ./...", "-exec=sh"},
			{"go build -toolexec /tmp/x .", "-toolexec"},
			{"go test -c -o /tmp/x", "-c"},
			{"go test -o /tmp/x", "-o"},
			{"go test -run -args -exec=/tmp/x", "-exec=/tmp/x"},
			{"go test -run -- -exec=/tmp/x", "-exec=/tmp/x"},
			{"go build -tags -- -toolexec=/tmp/x", "-toolexec=/tmp/x"},
			{"go test . -args -test.cpuprofile=/tmp/prof", "-test.cpuprofile=/tmp/prof"},
			{"go build -mod=mod .", "-mod=mod"},
			{"go test -coverprofile=/tmp/c.out ./...", "-coverprofile=/tmp/c.out"},
			{"go build -ldflags=-extld=sh .", "-ldflags=-extld=sh"},
			{"go test --exec sh ./...", "--exec"},
		} {
			v, traces := p.Explain(call("Bash", jsonString(tt.command)))
			if v.Effect == api.EffectAllow {
				t.Errorf("%s: %q was allowed", profile, tt.command)
				continue
			}
			if v.RuleID == "deny-options-that-run-or-write" {
				continue // the laptop policy denies the option outright
			}
			why := ""
			for _, tr := range traces {
				if tr.RuleID == "allow-safe-shell" || tr.RuleID == "allow-build-and-read" || strings.HasPrefix(tr.RuleID, "allow") {
					why += tr.Why
				}
			}
			if !strings.Contains(why, tt.option+" is not an option of") {
				t.Errorf("%s: %q: explain says %q, want it to name %s", profile, tt.command, why, tt.option)
			}
		}
	}
	laptop := shipped(t, "laptop")
	for _, command := range []string{"rg --pre=rm x data.db", "rg --pre rm x", "rg -z secret", "grep -f .env.example x.go",
		"grep --file=patterns x.go", "rg -e -- --pre=/tmp/x .", "grep -e -- -f/home/u/.ssh/id_rsa guess.txt",
		// Conservative: a word that starts with - is read as an option
		// wherever it stands, after -- too.
		"git log -- --output=x", "go test -run TestX ./e2e -args -update",
		// The project's runners with an option that adds a program, a
		// configuration, a directory or a file of the model's choosing.
		`cargo test --config 'target.x86_64-unknown-linux-gnu.runner=["sh","-c","cat ~/.netrc"]'`,
		"cargo build --manifest-path ../other/Cargo.toml", "npm test --script-shell=/bin/sh",
		"npm run --node-options=--require=/tmp/x.js test", "npm run build --prefix ../other", "pytest --basetemp=..",
		"python3 -m pytest --basetemp=/tmp/x", "pytest --junitxml=/tmp/x.xml", "pytest --pastebin=all", "tsc -p ../other",
		"tsc --outFile /tmp/x.js x.ts", "date -s 2001-01-01", "date --set=2001-01-01", "go mod tidy -modfile=/tmp/x/go.mod",
		// git add -f stages what .gitignore keeps out; a refspec resets
		// or deletes local branches; --untracked searches ignored files.
		"git add -f .", "git add --force .env", "git fetch . +HEAD~1:feature", "git pull . +HEAD~1:feature",
		"git fetch -f . x:y", "git grep --untracked -e .", "npm run env"} {
		if v := laptop.Decide(call("Bash", jsonString(command))); v.Effect == api.EffectAllow {
			t.Errorf("laptop: %q was allowed", command)
		}
	}
	for _, command := range []string{"git log --oneline -5", "git log -n 3 --stat", "git log -p -- README.md",
		"git diff --cached --stat", "git diff HEAD~1 -- README.md", "git diff -U5 --word-diff", "git status -sb",
		"go test ./... -run TestX -count=1 -v", "go test -race -timeout 5m ./policy",
		"go test -short -json ./...", "go build ./...", "go build -o", "rg -n -i foo src", "rg --files",
		"rg -tgo -A3 -e foo", "grep -rn TODO .", "grep -A3 foo x.go", "ls -la", "cat -n README.md",
		"cargo test -- --nocapture", "pytest -x -q tests/", "npm test", "npm run build", "tsc --noEmit", "go mod tidy",
		"date +%s"} {
		v := laptop.Decide(call("Bash", jsonString(command)))
		if command == "go build -o" { // -o writes where it is told: not allowed
			if v.Effect == api.EffectAllow {
				t.Errorf("laptop: %q was allowed", command)
			}
			continue
		}
		if v.Effect != api.EffectAllow {
			t.Errorf("laptop: %q: %s (%s), want allow", command, v.Effect, v.Message)
		}
	}
}

// An option the rule's own prefix names is the author's choice, and
// stands; the model judges what comes after it.
func TestOptionsThePrefixNamesStand(t *testing.T) {
	p := mustParse(t, `{"version":1,"default":"ask","rules":[
		{"id":"allow","effect":"allow","tool":"Bash","input":{"command":{"command":[["go","test","-exec","./wrap.sh"],["git"]]}}}]}`)
	for command, want := range map[string]api.Effect{
		"go test -exec ./wrap.sh ./...":     api.EffectAllow,
		"go test -exec ./wrap.sh -o x ./..": api.EffectAsk,
		"git push origin main":              api.EffectAllow, // no model: git push is the author's to allow
		"git log --output=x":                api.EffectAsk,
	} {
		if v := p.Decide(call("Bash", jsonString(command))); v.Effect != want {
			t.Errorf("%q: %s, want %s", command, v.Effect, want)
		}
	}
}
