package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tidwall/gjson"
)

// Scope paths: where Claude Code reads the settings toolgate installs into.

// UserSettings is the user's settings file: $CLAUDE_CONFIG_DIR/settings.json,
// or ~/.claude/settings.json.
func UserSettings(getenv func(string) string, home string) string {
	if dir := getenv("CLAUDE_CONFIG_DIR"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "settings.json")
	}
	return filepath.Join(home, ".claude", "settings.json")
}

// ProjectSettings is a project's shared settings file.
func ProjectSettings(project string) string {
	return filepath.Join(project, ".claude", "settings.json")
}

// LocalSettings is a project's settings file for this checkout only,
// which Claude Code reads after the shared one and git does not share.
func LocalSettings(project string) string {
	return filepath.Join(project, ".claude", "settings.local.json")
}

// InstallFile installs toolgate's hook into the settings file at path,
// creating it (and its directory) when there is none. changed is false
// when it was installed already, exactly so; the file is then untouched.
func InstallFile(path string, o Options) (changed bool, err error) {
	doc, err := os.ReadFile(path)
	created := errors.Is(err, fs.ErrNotExist)
	switch {
	case created:
		doc = []byte("{}")
	case err != nil:
		return false, err
	}
	out, changed, err := Add(doc, o)
	if err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	if !changed {
		return false, nil
	}
	if created {
		// A new file is toolgate's alone: lay it out as people write it.
		var pretty bytes.Buffer
		json.Indent(&pretty, out, "", "  ")
		out = append(pretty.Bytes(), '\n')
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return false, err
		}
	}
	return true, writeFile(path, out)
}

// UninstallFile removes toolgate's hook entries from the settings file at
// path. A file left holding nothing (an empty object) is removed: it held
// only what toolgate installed. changed is false when there was nothing to
// remove.
func UninstallFile(path string) (changed bool, err error) {
	doc, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	out, changed, err := Remove(doc)
	if err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	if !changed {
		return false, nil
	}
	if rest := gjson.ParseBytes(out); rest.IsObject() && len(rest.Map()) == 0 {
		return true, os.Remove(path)
	}
	return true, writeFile(path, out)
}

// FindFile lists toolgate's hook entries in the settings file at path; a
// missing file has none.
func FindFile(path string) ([]Entry, error) {
	doc, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := check(doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return Find(doc), nil
}

// writeFile replaces path with data atomically, keeping its mode: a crash
// leaves the old file or the new one, never half of one.
func writeFile(path string, data []byte) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real // a settings file linked from a dotfiles repository stays a link
	}
	mode := fs.FileMode(0o644)
	if info, err := os.Stat(path); err == nil {
		mode = info.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".settings-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
