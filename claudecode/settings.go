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
