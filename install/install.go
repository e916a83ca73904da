// Package install puts toolgate's hook into a Claude Code settings file and
// takes it out again, for sessions started without toolgate run (an
// interactive claude, or claude -p from a script that does not wrap it).
//
// The file is edited in place with sjson, so everything that is not
// toolgate's (other hooks, unrelated keys, the user's formatting) stays as
// it was, byte for byte: Add appends one matcher group per hook event, and
// Remove deletes exactly those groups, and the containers Add created
// when they hold nothing else. A file that is not valid JSON is refused,
// never rewritten. A hook entry is toolgate's when its command runs a
// program named toolgate-hook.
//
// It must not import the daemon, the ledger or the policy engine.
package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/claudecode"
	"mvdan.cc/sh/v3/shell"
)

// HookName is the hook program's name, by which toolgate's entries are known.
const HookName = "toolgate-hook"

// Options say what to install.
type Options struct {
	// Hook is the toolgate-hook executable as the command names it: an
	// absolute path; a path relative to the project (run from
	// $CLAUDE_PROJECT_DIR); or a bare name, found on PATH. The last two
	// are portable: a project's shared settings name the hook so.
	Hook            string
	Policy          string        // the policy as the command names it: absolute, or relative to the project
	ApprovalTimeout time.Duration // how long a PermissionRequest waits for a person
	// PermissionMargin is how much longer than ApprovalTimeout the hook
	// itself may take; Claude Code's timeout for it is twice as far.
	PermissionMargin time.Duration
	// Sandbox, when set, is the "sandbox" block to add beside the hooks
	// (claudecode.SandboxSettings): the boundary of interactive sessions.
	// A file that configures the sandbox itself keeps its own.
	Sandbox []byte
	// Shell, when set, is toolgate-bash as the env block names it
	// (CLAUDE_CODE_SHELL), and Boundary what it reads (TOOLGATE_BOUNDARY):
	// the boundary of every Bash command of the sessions. A file whose env
	// block names another shell keeps it.
	Shell, Boundary string
}

// ShellName is the boundary program's name, by which toolgate's env
// entries are known.
const ShellName = "toolgate-bash"

// isToolgateShell reports whether an env block's CLAUDE_CODE_SHELL is
// toolgate's.
func isToolgateShell(v gjson.Result) bool {
	return v.Type == gjson.String && filepath.Base(v.Str) == ShellName
}

// Events are the hook events toolgate installs: the call before and after
// it runs, the ask, and the session's end.
var Events = []string{api.PreToolUse, api.PermissionRequest, api.PostToolUse, api.PostToolUseFailure, api.PostToolBatch, api.SessionEnd}

// Command is the hook's command line. A relative policy or hook path is
// taken from the project's directory, which Claude Code passes to hooks;
// a hook named without a path is found on PATH.
func (o Options) Command() string {
	hook := claudecode.ShellQuote(o.Hook)
	if !filepath.IsAbs(o.Hook) && strings.Contains(o.Hook, "/") {
		hook = inProject(o.Hook)
	}
	return strings.Join([]string{"GOMAXPROCS=1", "exec", hook, "--policy", inProjectUnlessAbs(o.Policy),
		"--approval-timeout", o.ApprovalTimeout.String()}, " ")
}

// inProject names a path relative to the project as the hook's shell reads it.
func inProject(rel string) string {
	return `"$CLAUDE_PROJECT_DIR"/` + claudecode.ShellQuote(filepath.ToSlash(rel))
}

func inProjectUnlessAbs(path string) string {
	if filepath.IsAbs(path) {
		return claudecode.ShellQuote(path)
	}
	return inProject(path)
}

// timeout is Claude Code's timeout for the event's hook, in seconds.
func (o Options) timeout(event string) int {
	if event != api.PermissionRequest {
		return claudecode.HookTimeout
	}
	return int(math.Ceil((o.ApprovalTimeout + 2*o.PermissionMargin).Seconds()))
}

// entry is the matcher group for one event.
func (o Options) entry(event string) string {
	return claudecode.HookGroup(o.Command(), o.timeout(event))
}

// InvalidError is a settings document that is not valid JSON, or not an
// object where Claude Code expects one.
type InvalidError struct{ Reason string }

func (e *InvalidError) Error() string { return "not a valid Claude Code settings file: " + e.Reason }

// check refuses a document that Add or Remove could only damage.
func check(doc []byte) error {
	if !gjson.ValidBytes(doc) {
		return &InvalidError{"it is not valid JSON"}
	}
	if !gjson.ParseBytes(doc).IsObject() {
		return &InvalidError{"it is not a JSON object"}
	}
	if hooks := gjson.GetBytes(doc, "hooks"); hooks.Exists() && !hooks.IsObject() {
		return &InvalidError{`its "hooks" is not an object`}
	}
	for _, event := range Events {
		if groups := gjson.GetBytes(doc, "hooks."+event); groups.Exists() && !groups.IsArray() {
			return &InvalidError{fmt.Sprintf(`its "hooks.%s" is not an array`, event)}
		}
	}
	return nil
}

// Add returns doc with toolgate's hook installed for every event: a group
// is appended where the event has none of toolgate's, and a toolgate
// command that differs (another policy, an older path) is updated in
// place. changed is false when doc already had exactly these entries.
func Add(doc []byte, o Options) (out []byte, changed bool, err error) {
	if err := check(doc); err != nil {
		return nil, false, err
	}
	out = doc
	for _, event := range Events {
		found := false
		for _, h := range find(out, event) {
			found = true
			if h.command.String() != o.Command() {
				if out, err = sjson.SetBytes(out, h.path+".command", o.Command()); err != nil {
					return nil, false, err
				}
				changed = true
			}
			if h.timeout.Int() != int64(o.timeout(event)) {
				if out, err = sjson.SetBytes(out, h.path+".timeout", o.timeout(event)); err != nil {
					return nil, false, err
				}
				changed = true
			}
		}
		if found {
			continue
		}
		switch {
		case gjson.GetBytes(out, "hooks."+event).Exists():
			out, err = appendElem(out, "hooks."+event, []byte(o.entry(event)))
		case gjson.GetBytes(out, "hooks").Exists():
			out, err = addMember(out, "hooks", event, []byte("["+o.entry(event)+"]"))
		default:
			out, err = addMember(out, "", "hooks", []byte(`{"`+event+`":[`+o.entry(event)+"]}"))
		}
		if err != nil {
			return nil, false, err
		}
		changed = true
	}
	if o.Shell != "" {
		if out, changed, err = addShell(out, o, changed); err != nil {
			return nil, false, err
		}
	}
	switch sb := gjson.GetBytes(out, "sandbox"); {
	case o.Sandbox == nil:
	case !sb.Exists():
		if out, err = addMember(out, "", "sandbox", o.Sandbox); err != nil {
			return nil, false, err
		}
		changed = true
	case IsToolgateSandbox(sb) && !jsonEqual(sb.Raw, o.Sandbox):
		if out, err = sjson.SetRawBytes(out, "sandbox", o.Sandbox); err != nil {
			return nil, false, err
		}
		changed = true
	}
	return out, changed, nil
}

// IsToolgateSandbox reports whether a settings file's "sandbox" block is
// the one install writes (claudecode.SandboxSettings, whatever its
// paths): exactly those keys, with those values. Anything else is the
// user's, and uninstall leaves it.
func IsToolgateSandbox(sb gjson.Result) bool {
	if !sb.IsObject() || len(sb.Map()) != 4 || sb.Get("enabled").Type != gjson.True ||
		sb.Get("autoAllowBashIfSandboxed").Type != gjson.False || sb.Get("allowUnsandboxedCommands").Type != gjson.False {
		return false
	}
	fs := sb.Get("filesystem")
	if !fs.IsObject() || len(fs.Map()) != 1 || !fs.Get("denyWrite").IsArray() {
		return false
	}
	for _, p := range fs.Get("denyWrite").Array() {
		if p.Type != gjson.String {
			return false
		}
	}
	return true
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(a string, b []byte) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// Remove returns doc without any of toolgate's hook entries: a group that
// held only toolgate's is deleted whole, and an event, or the "hooks"
// object, left empty by that is deleted too. changed is false when doc had
// none.
func Remove(doc []byte) (out []byte, changed bool, err error) {
	if err := check(doc); err != nil {
		return nil, false, err
	}
	out = doc
	var events []string
	gjson.GetBytes(out, "hooks").ForEach(func(k, _ gjson.Result) bool { events = append(events, k.String()); return true })
	for _, event := range events {
		groups := gjson.GetBytes(out, gjsonKey("hooks", event))
		if !groups.IsArray() {
			continue
		}
		arr, removed := groups.Array(), false
		for i := len(arr) - 1; i >= 0; i-- {
			hooks := arr[i].Get("hooks").Array()
			ours := 0
			for j := len(hooks) - 1; j >= 0; j-- {
				if isToolgate(hooks[j].Get("command").String()) {
					ours++
				}
			}
			if ours == 0 {
				continue
			}
			group := gjsonKey("hooks", event) + "." + strconv.Itoa(i)
			if ours == len(hooks) {
				out, err = sjson.DeleteBytes(out, group)
			} else {
				for j := len(hooks) - 1; j >= 0 && err == nil; j-- {
					if isToolgate(hooks[j].Get("command").String()) {
						out, err = sjson.DeleteBytes(out, group+".hooks."+strconv.Itoa(j))
					}
				}
			}
			if err != nil {
				return nil, false, err
			}
			changed, removed = true, true
		}
		if rest := gjson.GetBytes(out, gjsonKey("hooks", event)); removed && rest.IsArray() && len(rest.Array()) == 0 {
			if out, err = sjson.DeleteBytes(out, gjsonKey("hooks", event)); err != nil {
				return nil, false, err
			}
		}
	}
	if hooks := gjson.GetBytes(out, "hooks"); changed && hooks.IsObject() && len(hooks.Map()) == 0 {
		if out, err = sjson.DeleteBytes(out, "hooks"); err != nil {
			return nil, false, err
		}
	}
	if IsToolgateSandbox(gjson.GetBytes(out, "sandbox")) {
		if out, err = sjson.DeleteBytes(out, "sandbox"); err != nil {
			return nil, false, err
		}
		changed = true
	}
	if isToolgateShell(gjson.GetBytes(out, "env.CLAUDE_CODE_SHELL")) {
		for _, k := range []string{"env.CLAUDE_CODE_SHELL", "env.TOOLGATE_BOUNDARY"} {
			if out, err = sjson.DeleteBytes(out, k); err != nil {
				return nil, false, err
			}
		}
		if env := gjson.GetBytes(out, "env"); env.IsObject() && len(env.Map()) == 0 {
			if out, err = sjson.DeleteBytes(out, "env"); err != nil {
				return nil, false, err
			}
		}
		changed = true
	}
	return out, changed, nil
}

// addShell sets the env block's CLAUDE_CODE_SHELL and TOOLGATE_BOUNDARY,
// unless it names a shell of its own (ErrOtherShell).
func addShell(out []byte, o Options, changed bool) ([]byte, bool, error) {
	env := gjson.GetBytes(out, "env")
	if shell := env.Get("CLAUDE_CODE_SHELL"); shell.Exists() && !isToolgateShell(shell) {
		return nil, false, ErrOtherShell
	}
	var err error
	if !env.Exists() {
		doc, _ := json.Marshal(map[string]string{"CLAUDE_CODE_SHELL": o.Shell, "TOOLGATE_BOUNDARY": o.Boundary})
		out, err = addMember(out, "", "env", doc)
		return out, true, err
	}
	for k, v := range map[string]string{"CLAUDE_CODE_SHELL": o.Shell, "TOOLGATE_BOUNDARY": o.Boundary} {
		if cur := env.Get(k); cur.Type == gjson.String && cur.Str == v {
			continue
		}
		if out, err = sjson.SetBytes(out, "env."+k, v); err != nil {
			return nil, false, err
		}
		changed = true
	}
	return out, changed, nil
}

// ErrOtherShell is a settings file whose env block runs Bash commands
// with a shell of its own (CLAUDE_CODE_SHELL): install cannot put the
// boundary there without taking that away.
var ErrOtherShell = errors.New("its env block sets CLAUDE_CODE_SHELL to a shell of its own, which toolgate's boundary would replace: remove it, or install with --containment sandbox or off")

// Entry is one of toolgate's hook entries found in a settings document.
type Entry struct {
	Event   string
	Command string
	Timeout int
}

// Find lists toolgate's hook entries in doc, in event order.
func Find(doc []byte) []Entry {
	var out []Entry
	gjson.GetBytes(doc, "hooks").ForEach(func(k, _ gjson.Result) bool {
		for _, h := range find(doc, k.String()) {
			out = append(out, Entry{Event: k.String(), Command: h.command.String(), Timeout: int(h.timeout.Int())})
		}
		return true
	})
	return out
}

// hookAt is one hook object of toolgate's, with its sjson path.
type hookAt struct {
	path             string
	command, timeout gjson.Result
}

func find(doc []byte, event string) []hookAt {
	var out []hookAt
	for i, group := range gjson.GetBytes(doc, gjsonKey("hooks", event)).Array() {
		for j, h := range group.Get("hooks").Array() {
			if cmd := h.Get("command"); isToolgate(cmd.String()) {
				path := fmt.Sprintf("%s.%d.hooks.%d", gjsonKey("hooks", event), i, j)
				out = append(out, hookAt{path: path, command: cmd, timeout: h.Get("timeout")})
			}
		}
	}
	return out
}

// isToolgate reports whether a hook command runs toolgate-hook.
func isToolgate(command string) bool {
	program, _, err := Parse(command, "")
	return err == nil && filepath.Base(program) == HookName
}

// Parse reads a hook command as the shell would run it: the program and its
// arguments, past leading assignments (GOMAXPROCS=1) and exec, with
// $CLAUDE_PROJECT_DIR as project (and no other variable) expanded.
func Parse(command, project string) (program string, args []string, err error) {
	words, err := shell.Fields(command, func(name string) string {
		if name == "CLAUDE_PROJECT_DIR" {
			return project
		}
		return ""
	})
	if err != nil {
		return "", nil, err
	}
	for len(words) > 0 && (words[0] == "exec" || assignment(words[0])) {
		words = words[1:]
	}
	if len(words) == 0 {
		return "", nil, fmt.Errorf("no program in %q", command)
	}
	return words[0], words[1:], nil
}

// assignment reports whether a word is NAME=value.
func assignment(word string) bool {
	name, _, ok := strings.Cut(word, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if r != '_' && !unicode.IsLetter(r) && !(i > 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}

// gjsonKey joins path components, escaping what gjson and sjson read as syntax.
func gjsonKey(parts ...string) string {
	for i, p := range parts {
		r := strings.NewReplacer(`\`, `\\`, ".", `\.`, "*", `\*`, "?", `\?`, "|", `\|`, "#", `\#`, "@", `\@`, "!", `\!`)
		parts[i] = r.Replace(p)
	}
	return strings.Join(parts, ".")
}
