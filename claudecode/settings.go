package claudecode

import (
	"github.com/tidwall/sjson"
)

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
// claude with --settings.
func HooksSettings(command string, events ...string) []byte {
	doc := []byte(`{"hooks":{}}`)
	for _, event := range events {
		doc, _ = sjson.SetRawBytes(doc, "hooks."+event, []byte("["+HookGroup(command, HookTimeout)+"]"))
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
