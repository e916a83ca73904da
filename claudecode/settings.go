package claudecode

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolgate/toolgate/internal/clip"
	"github.com/toolgate/toolgate/paths"
)

// MaxSettingsFile bounds a settings file toolgate reads: Claude Code's
// are a few KB.
const MaxSettingsFile = 16 << 20

// HookTimeout is the timeout, in seconds, Claude Code gives toolgate's
// hook on every event but an installed PermissionRequest. The hook
// answers by itself long before it (hook.Timeout): a hook killed at its
// timeout would be "no verdict", and an auto-allowed call would run.
const HookTimeout = 30

// HookGroup is one matcher group of a settings file's hooks block: every
// tool ("*"), one command hook.
func HookGroup(command string, timeout int) string {
	hook, _ := sjson.Set(`{"type":"command"}`, "command", command)
	hook, _ = sjson.Set(hook, "timeout", timeout)
	group, _ := sjson.SetRaw(`{"matcher":"*"}`, "hooks", "["+hook+"]")
	return group
}

// HooksSettings is a settings document whose hooks block runs command
// for each of the events, with HookTimeout: what toolgate run passes to
// claude with --settings. It pins disableAllHooks off: Claude Code reads
// its other settings layers again when they change, and a --settings
// layer wins over them (see HTTPHooksSettings).
func HooksSettings(command string, events ...string) []byte {
	doc := []byte(`{"disableAllHooks":false,"hooks":{}}`)
	for _, event := range events {
		doc, _ = sjson.SetRawBytes(doc, "hooks."+event, []byte("["+HookGroup(command, HookTimeout)+"]"))
	}
	return doc
}

// HTTPHooksSettings is a settings document whose hooks block POSTs each
// of the events to url, with the header Authorization: Bearer token and a
// timeout of timeout seconds: what toolgate run passes to claude with
// --settings for its http hooks. Claude Code sends the same JSON a command
// hook reads on stdin and reads the response body as the hook's answer;
// a failed request (refused, an HTTP error, no answer in time) is no
// verdict, so the server must always answer.
//
// Claude Code reads its other settings layers again when they change, and
// some of their keys would make every hook fail: disableAllHooks, an
// allowedHttpHookUrls the url is not in, the sandbox (whose proxy refuses
// loopback), a proxy in env. A --settings layer wins over them (observed
// on 2.1.332), so the document pins each: hooks on, the url allowed, the
// sandbox off, and NO_PROXY (noProxy, which must exempt the url's host).
func HTTPHooksSettings(url, token string, timeout int, noProxy string, events ...string) []byte {
	hook, _ := sjson.Set(`{"type":"http"}`, "url", url)
	hook, _ = sjson.Set(hook, "headers.Authorization", "Bearer "+token)
	hook, _ = sjson.Set(hook, "timeout", timeout)
	group, _ := sjson.SetRaw(`{"matcher":"*"}`, "hooks", "["+hook+"]")
	doc := []byte(`{"disableAllHooks":false,"allowedHttpHookUrls":[],"sandbox":{"enabled":false},"env":{},"hooks":{}}`)
	doc, _ = sjson.SetBytes(doc, "allowedHttpHookUrls.0", url)
	doc, _ = sjson.SetBytes(doc, "env.NO_PROXY", noProxy)
	doc, _ = sjson.SetBytes(doc, "env.no_proxy", noProxy)
	for _, event := range events {
		doc, _ = sjson.SetRawBytes(doc, "hooks."+event, []byte("["+group+"]"))
	}
	return doc
}

// SandboxSettings is the value of a settings file's "sandbox" key that runs
// every Bash command in Claude Code's sandbox and never outside it (the
// model's dangerouslyDisableSandbox is ignored), with Bash calls still
// going through the permission flow, and writes to denyWrite refused.
// Claude Code starts the sandbox only where bubblewrap and socat are
// installed; without them it runs commands unsandboxed after a warning.
func SandboxSettings(denyWrite []string) []byte {
	doc := []byte(`{"enabled":true,"autoAllowBashIfSandboxed":false,"allowUnsandboxedCommands":false,"filesystem":{"denyWrite":[]}}`)
	for _, p := range denyWrite {
		doc, _ = sjson.SetBytes(doc, "filesystem.denyWrite.-1", p)
	}
	return doc
}

// ManagedSettings is Claude Code's managed settings file on Linux.
const ManagedSettings = "/etc/claude-code/managed-settings.json"

// SandboxSettingsFiles are the settings a session in cwd reads beside
// --settings: the managed file, the user's (in claudeDir), the project's
// and its local one.
func SandboxSettingsFiles(cwd, claudeDir string) []string {
	files := []string{ManagedSettings, filepath.Join(cwd, ".claude", "settings.json"), filepath.Join(cwd, ".claude", "settings.local.json")}
	if claudeDir != "" {
		files = append(files, filepath.Join(claudeDir, "settings.json"))
	}
	return files
}

// SandboxEnabled reports whether a claude session with args, in cwd, may
// turn Claude Code's sandbox on: a settings layer it reads says
// "sandbox": {"enabled": true}, or one cannot be read (--settings values,
// the files of SandboxSettingsFiles). Claude Code then sends http hooks
// through the sandbox's network proxy, which refuses loopback addresses
// (observed on 2.1.332: HTTP 403), and a refused hook is no verdict.
func SandboxEnabled(args []string, cwd, claudeDir string) (bool, string) {
	for _, f := range SandboxSettingsFiles(cwd, claudeDir) {
		data, err := paths.ReadRegular(f, MaxSettingsFile) // a FIFO there (the model's code can make one) would hold run's start
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil || gjson.GetBytes(data, "sandbox.enabled").Bool() {
			return true, f
		}
	}
	for _, v := range SettingsArgs(args) {
		data := []byte(v)
		if !strings.HasPrefix(strings.TrimSpace(v), "{") {
			path := v
			if !filepath.IsAbs(path) {
				path = filepath.Join(cwd, path)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return true, v
			}
			data = b
		}
		if gjson.GetBytes(data, "sandbox.enabled").Bool() {
			return true, "--settings " + clip.String(v, 60)
		}
	}
	return false, ""
}
