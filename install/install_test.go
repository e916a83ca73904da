package install

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/claudecode"
)

var opts = Options{Hook: "/opt/toolgate/bin/toolgate-hook", Policy: "/home/u/.config/toolgate/policy.json",
	ApprovalTimeout: 5 * time.Minute, PermissionMargin: 15 * time.Second}

// A settings file as people keep it: their own hooks, unrelated keys,
// their own layout.
const existing = `{
  "model": "opus",
  "permissions": {
    "allow": ["Bash(npm test)"]
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          { "type": "command", "command": "~/bin/audit-bash.sh", "timeout": 5 }
        ]
      }
    ],
    "Stop": [
      { "hooks": [ { "type": "command", "command": "notify-send done" } ] }
    ]
  },
  "env": { "FOO": "bar" }
}
`

func TestInstallRoundTrip(t *testing.T) {
	out, changed, err := Add([]byte(existing), opts)
	if err != nil || !changed {
		t.Fatalf("add: changed %v, %v", changed, err)
	}
	// Everything that was there is still there, unchanged.
	for _, path := range []string{"model", "permissions", "env", "hooks.Stop", "hooks.PreToolUse.0"} {
		if got, want := gjson.GetBytes(out, path).Raw, gjson.Get(existing, path).Raw; got != want {
			t.Errorf("%s changed:\n got %s\nwant %s", path, got, want)
		}
	}
	// toolgate's entries are there, once per event.
	entries := Find(out)
	if len(entries) != len(Events) {
		t.Fatalf("entries: %+v", entries)
	}
	for _, e := range entries {
		if e.Command != opts.Command() {
			t.Errorf("%s: command %q", e.Event, e.Command)
		}
		want := claudecode.HookTimeout
		if e.Event == "PermissionRequest" {
			want = 330 // 5 min + 2 × 15 s
		}
		if e.Timeout != want {
			t.Errorf("%s: timeout %d, want %d", e.Event, e.Timeout, want)
		}
	}
	if got := gjson.GetBytes(out, "hooks.PreToolUse.#").Int(); got != 2 {
		t.Errorf("PreToolUse has %d groups, want the user's and toolgate's", got)
	}
	// Installing again changes nothing.
	again, changed, err := Add(out, opts)
	if err != nil || changed || string(again) != string(out) {
		t.Errorf("a second install changed the file (changed %v, err %v)", changed, err)
	}
	// Uninstalling restores the file byte for byte.
	back, changed, err := Remove(out)
	if err != nil || !changed {
		t.Fatalf("remove: changed %v, %v", changed, err)
	}
	if string(back) != existing {
		t.Errorf("uninstall did not restore the file:\n%s", back)
	}
	if _, changed, _ := Remove(back); changed {
		t.Error("a second uninstall changed the file")
	}
}

func TestInstallUpdatesItsOwnCommand(t *testing.T) {
	out, _, _ := Add([]byte(existing), opts)
	moved := opts
	moved.Policy = "/etc/toolgate/policy.json"
	moved.ApprovalTimeout = time.Minute
	out, changed, err := Add(out, moved)
	if err != nil || !changed {
		t.Fatalf("changed %v, %v", changed, err)
	}
	for _, e := range Find(out) {
		if e.Command != moved.Command() {
			t.Errorf("%s still runs %q", e.Event, e.Command)
		}
	}
	if n := len(Find(out)); n != len(Events) {
		t.Errorf("%d entries after an update, want %d", n, len(Events))
	}
}

// A user who added their own command to toolgate's group keeps it.
func TestUninstallKeepsWhatOthersAddedToItsGroup(t *testing.T) {
	out, _, _ := Add([]byte(`{}`), opts)
	mixed := strings.Replace(string(out), `"hooks":[{"type":"command"`, `"hooks":[{"type":"command","command":"mine"},{"type":"command"`, 1)
	back, _, err := Remove([]byte(mixed))
	if err != nil {
		t.Fatal(err)
	}
	if got := gjson.GetBytes(back, "hooks.PreToolUse.0.hooks").Raw; got != `[{"type":"command","command":"mine"}]` {
		t.Errorf("the user's own command in toolgate's group: %s\n%s", got, back)
	}
	if len(Find(back)) != 0 {
		t.Errorf("toolgate's entries left: %s", back)
	}
}

func TestRefusesWhatItCannotEditSafely(t *testing.T) {
	for _, doc := range []string{`{"hooks": {`, `// comment
{}`, `[]`, `{"hooks": []}`, `{"hooks": {"PreToolUse": {}}}`, ``} {
		for name, edit := range map[string]func([]byte) ([]byte, bool, error){
			"add": func(d []byte) ([]byte, bool, error) { return Add(d, opts) }, "remove": Remove} {
			_, _, err := edit([]byte(doc))
			var invalid *InvalidError
			if !errors.As(err, &invalid) {
				t.Errorf("%s %q: %v, want an InvalidError", name, doc, err)
			}
		}
	}
}

func TestIsToolgate(t *testing.T) {
	for cmd, want := range map[string]bool{
		`'/opt/x/toolgate-hook' --policy '/p.json'`:             true,
		`toolgate-hook --policy ~/.config/toolgate/policy.json`: true,
		`"/a b/toolgate-hook"`:                                  true,
		`/usr/bin/not-toolgate-hook`:                            false,
		`echo toolgate-hook`:                                    false,
		`~/bin/audit-bash.sh`:                                   false,
	} {
		if got := isToolgate(cmd); got != want {
			t.Errorf("isToolgate(%q) = %v", cmd, got)
		}
	}
}

func TestCommandOfAProjectPolicy(t *testing.T) {
	o := opts
	o.Policy = "policies/team's.json"
	want := `GOMAXPROCS=1 exec '/opt/toolgate/bin/toolgate-hook' --policy "$CLAUDE_PROJECT_DIR"/'policies/team'\''s.json' --approval-timeout 5m0s`
	if got := o.Command(); got != want {
		t.Errorf("command:\n got %s\nwant %s", got, want)
	}
}

func TestInstallFileCreatesAndRemovesItsOwnFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".claude", "settings.json")
	if changed, err := InstallFile(path, opts); err != nil || !changed {
		t.Fatalf("install: %v %v", changed, err)
	}
	data, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(data), "{\n  \"hooks\": {\n") || len(Find(data)) != len(Events) {
		t.Errorf("a new settings file:\n%s", data)
	}
	if changed, err := InstallFile(path, opts); err != nil || changed {
		t.Errorf("install again: %v %v", changed, err)
	}
	if changed, err := UninstallFile(path); err != nil || !changed {
		t.Fatalf("uninstall: %v %v", changed, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file toolgate created is still there: %v", err)
	}
}

func TestInstallFileKeepsModeAndLinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles-settings.json")
	if err := os.WriteFile(real, []byte(existing), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "settings.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallFile(link, opts); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a file")
	}
	if info, _ := os.Stat(real); info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
	if _, err := UninstallFile(link); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(real); string(data) != existing {
		t.Errorf("not restored:\n%s", data)
	}
}

func TestInvalidFileIsLeftAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	broken := `{"model": "opus",` + "\n"
	os.WriteFile(path, []byte(broken), 0o644)
	if _, err := InstallFile(path, opts); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("install into a broken file: %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) != broken {
		t.Errorf("the broken file was rewritten: %q", data)
	}
}

// Every layout round-trips exactly, whatever Add can or cannot lay out.
func TestRoundTripLayouts(t *testing.T) {
	for name, doc := range map[string]string{
		"compact":      `{"model":"opus","hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"x"}]}]}}`,
		"no hooks":     "{\n  \"model\": \"opus\"\n}\n",
		"empty object": `{}`,
		"tabs":         "{\n\t\"hooks\": {\n\t\t\"Stop\": [\n\t\t\t{\"hooks\": []}\n\t\t]\n\t}\n}",
		"crlf":         "{\r\n  \"model\": \"opus\",\r\n  \"env\": {}\r\n}\r\n",
		"empty hooks":  `{"hooks": {}, "x": 1}`,
	} {
		t.Run(name, func(t *testing.T) {
			out, changed, err := Add([]byte(doc), sandboxed)
			if err != nil || !changed || !gjson.ValidBytes(out) || len(Find(out)) != len(Events) ||
				!IsToolgateSandbox(gjson.GetBytes(out, "sandbox")) {
				t.Fatalf("add: %v %v\n%s", changed, err, out)
			}
			back, _, err := Remove(out)
			if err != nil {
				t.Fatal(err)
			}
			if name == "empty hooks" {
				doc = `{ "x": 1}` // the emptied "hooks" goes with toolgate's entries
			}
			if string(back) != doc {
				t.Errorf("not restored:\n got %q\nwant %q\n(installed: %s)", back, doc, out)
			}
		})
	}
}

var sandboxed = func() Options {
	o := opts
	o.Sandbox = claudecode.SandboxSettings([]string{"/run/user/1000/toolgate", "/home/u/.local/state/toolgate"})
	return o
}()

// The sandbox block install writes goes in beside the hooks and comes out
// with them; a file that configures the sandbox itself keeps its own,
// through install and uninstall.
func TestInstallSandbox(t *testing.T) {
	out, _, err := Add([]byte(existing), sandboxed)
	if err != nil {
		t.Fatal(err)
	}
	if got := gjson.GetBytes(out, "sandbox.filesystem.denyWrite.1").String(); got != "/home/u/.local/state/toolgate" {
		t.Errorf("denyWrite: %s", gjson.GetBytes(out, "sandbox").Raw)
	}
	moved := sandboxed
	moved.Sandbox = claudecode.SandboxSettings([]string{"/elsewhere"})
	again, changed, err := Add(out, moved)
	if err != nil || !changed || gjson.GetBytes(again, "sandbox.filesystem.denyWrite.0").String() != "/elsewhere" {
		t.Errorf("toolgate's own block was not updated: %v %v %s", changed, err, gjson.GetBytes(again, "sandbox").Raw)
	}
	if back, _, _ := Remove(again); string(back) != existing {
		t.Errorf("not restored:\n%s", back)
	}
	for _, own := range []string{
		`{"sandbox": {"enabled": false}}`,
		`{"sandbox": {"enabled": true, "autoAllowBashIfSandboxed": false, "allowUnsandboxedCommands": true, "filesystem": {"denyWrite": []}}}`,
		`{"sandbox": {"enabled": true, "autoAllowBashIfSandboxed": false, "allowUnsandboxedCommands": false, "filesystem": {"denyWrite": []}, "network": {}}}`,
	} {
		out, _, err := Add([]byte(own), sandboxed)
		if err != nil || gjson.GetBytes(out, "sandbox").Raw != gjson.Get(own, "sandbox").Raw {
			t.Errorf("the user's sandbox changed: %v %s", err, out)
		}
		if back, _, _ := Remove(out); string(back) != own {
			t.Errorf("uninstall took the user's sandbox:\n got %s\nwant %s", back, own)
		}
	}
}
