package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"
)

// Claude Code merges its settings from several layers, and some of what
// they say would take calls around toolgate run's hooks: disableAllHooks
// switches every hook off, run's own included, and another PreToolUse or
// PermissionRequest hook that allows may hand Claude Code another input
// to run (updatedInput) than the one toolgate decided. run checks the
// layers before claude starts; the guard keeps the session's tools from
// writing them, and Claude Code's sandbox keeps Bash from it.

// SettingsError is a settings layer that would take calls around the gate.
type SettingsError struct {
	File, Problem, Fix string
}

func (e *SettingsError) Error() string {
	return fmt.Sprintf("%s %s: claude was not started\nTry: %s", e.File, e.Problem, e.Fix)
}

// settingsLayers are the settings files a claude -p in cwd reads: the
// managed settings, the user's, the project's and the project's local
// ones.
func settingsLayers(claudeDir, cwd string) []string {
	files := []string{"/etc/claude-code/managed-settings.json"}
	if claudeDir != "" {
		files = append(files, filepath.Join(claudeDir, "settings.json"), filepath.Join(claudeDir, "settings.local.json"))
	}
	return append(files, filepath.Join(cwd, ".claude", "settings.json"), filepath.Join(cwd, ".claude", "settings.local.json"))
}

// checkSettings refuses settings that would take calls around the gate:
// any layer's disableAllHooks, and, unless otherHooks, another PreToolUse
// or PermissionRequest hook. settingsArgs are the values of the user's own
// --settings (a file, or JSON).
func checkSettings(files, settingsArgs []string, otherHooks bool) error {
	type layer struct{ name, doc string }
	var layers []layer
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return &SettingsError{File: f, Problem: "cannot be read (" + err.Error() + ")", Fix: "make it readable, or remove it"}
		}
		layers = append(layers, layer{f, string(data)})
	}
	for _, v := range settingsArgs {
		if data, err := os.ReadFile(v); err == nil {
			layers = append(layers, layer{"--settings " + v, string(data)})
		} else if gjson.Valid(v) {
			layers = append(layers, layer{"--settings JSON", v})
		}
	}
	for _, l := range layers {
		if gjson.Get(l.doc, "disableAllHooks").Bool() {
			return &SettingsError{File: l.name, Problem: "sets disableAllHooks, which switches toolgate's hook off too",
				Fix: "remove disableAllHooks from it (if you did not put it there, something else did: see what changed it)"}
		}
		if otherHooks {
			continue
		}
		for _, event := range []string{"PreToolUse", "PermissionRequest"} {
			for _, group := range gjson.Get(l.doc, "hooks."+event).Array() {
				for _, h := range group.Get("hooks").Array() {
					if cmd := h.Get("command").String(); !strings.Contains(cmd, "toolgate-hook") {
						return &SettingsError{File: l.name, Problem: fmt.Sprintf("has a %s hook of its own (%q): a hook that allows may give Claude Code another input to run than the one toolgate decided", event, clip(cmd, 80)),
							Fix: "take it out, or run with --allow-other-hooks if you trust it"}
					}
				}
			}
		}
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
