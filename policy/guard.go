package policy

import (
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/paths"
	"github.com/toolgate/toolgate/policy/bash"
	"mvdan.cc/sh/v3/syntax"
)

// Guard is the deny rules every session gets before its policy's own,
// which no allow of the policy can loosen: what a session must never do to
// the gate itself. A model that could rewrite the policy, replace the hook
// or the daemon, edit Claude Code's settings, talk to the gate's sockets,
// forge a desktop click or schedule a command to run after the session
// would not be gated for long.
type Guard struct {
	// Protected are files and directories no tool of the session may
	// write, edit or read: toolgate's runtime, state and config
	// directories, its binaries, the session's policy, the files
	// toolgate run gives claude, Claude Code's settings files, and the
	// project's Claude Code configuration (.claude, .mcp.json).
	Protected []string `json:"protected"`
	// Sockets are the gate's socket directory: no command may name it.
	Sockets string `json:"sockets,omitempty"`
	// Writable are the only trees Claude Code's write tools may write in,
	// as written and with links resolved (none: no such limit).
	Writable []string `json:"writable,omitempty"`
}

// Guard rules, as explain shows them and verdicts name them.
const (
	GuardFiles    = "toolgate-guard-files"    // a tool names a protected path
	GuardCommands = "toolgate-guard-commands" // a command talks to the gate, decides, or schedules
)

// guardDecisions are the toolgate subcommands a session must not run.
var guardDecisions = map[string]bool{"approve": true, "deny": true, "serve": true, "install": true,
	"uninstall": true, "notify": true, "watch": true}

// guardPrograms are programs that run a command later, outside the session
// (and its containment): what the model schedules could approve its calls.
var guardPrograms = map[string]bool{"crontab": true, "at": true, "batch": true, "systemd-run": true}

// PathKeys are the keys of a tool's input that name a file or directory
// it works in.
var PathKeys = []string{"file_path", "notebook_path", "path"}

// check is the guard's verdict on a call, with the rule that denied it
// and why; ok is false when the guard lets the call through to the policy.
func (g *Guard) check(c Call) (rule, why string, denied bool) {
	if g == nil {
		return "", "", false
	}
	in := gjson.ParseBytes(c.Input)
	for _, key := range PathKeys {
		if p := in.Get(key); p.Type == gjson.String {
			if hit := g.protects(rawPath(p.Str, c)); hit != "" {
				return GuardFiles, key + " " + p.Str + " is under " + hit + ", which no session may touch", true
			}
			if writes[c.Tool] {
				if what := startsCodeLater(rawPath(p.Str, c), c.Home); what != "" {
					return GuardFiles, key + " " + p.Str + " is " + what + ": what is written there runs later, outside the session's boundary", true
				}
				if !g.writable(rawPath(p.Str, c)) {
					return GuardFiles, key + " " + p.Str + " is outside the trees the session may write (the project, its temp dir, --writable): " +
						"its Bash commands cannot write there either", true
				}
			}
		}
	}
	if command, ok := runsCommand(c.Tool, c.Input); ok {
		if why := g.command(command, c); why != "" {
			return GuardCommands, why, true
		}
	}
	return "", "", false
}

// writable reports whether a write tool may write p: anywhere without a
// limit, else only where p, as written and with its links resolved, lies
// in one of the writable trees. p is joined to the call's directory, not
// cleaned (for physical), as for protects and startsCodeLater.
func (g *Guard) writable(raw string) bool {
	if len(g.Writable) == 0 {
		return true
	}
	in := func(p string) bool {
		return slices.ContainsFunc(g.Writable, func(w string) bool { return pathUnder(p, w) })
	}
	return in(path.Clean(raw)) && in(bash.Physical(raw))
}

// writes are Claude Code's tools that write the file they name.
var writes = map[string]bool{"Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true}

// rcFiles are the files in $HOME that a shell, a login or a desktop
// session runs.
var rcFiles = []string{".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv",
	".zprofile", ".zlogin", ".zlogout", ".xprofile", ".xsessionrc", ".inputrc", ".config/fish", ".config/autostart",
	".config/systemd", ".config/environment.d", ".local/share/dbus-1", ".claude.json"}

// startsCodeLater says what p is when a write there would run code later
// outside the session's boundary, as written and as its links lead, or "":
// git's config and hooks, Claude Code's project configuration (.claude,
// .mcp.json) at any depth (nested skills load when the model works there),
// and the shell's and the desktop's start-up files.
func startsCodeLater(raw, home string) string {
	for _, candidate := range []string{path.Clean(raw), bash.Physical(raw)} {
		parts := strings.Split(candidate, "/")
		for i, part := range parts {
			switch {
			case part == ".claude":
				return "Claude Code's configuration (" + strings.Join(parts[:i+1], "/") + ")"
			case part == ".mcp.json" && i == len(parts)-1:
				return "a list of MCP servers Claude Code starts"
			case part == ".git" && i+1 < len(parts) && (parts[i+1] == "config" || parts[i+1] == "config.worktree" || parts[i+1] == "hooks" || parts[i+1] == "commondir"):
				return "git's " + parts[i+1] + " (" + strings.Join(parts[:i+2], "/") + ")"
			}
		}
		if home == "" {
			continue
		}
		for _, rc := range rcFiles {
			if f := path.Join(home, rc); candidate == f || strings.HasPrefix(candidate, f+"/") {
				return "a start-up file (" + f + ")"
			}
		}
	}
	return ""
}

// opaque are the trees whose paths name another file for each process that
// opens them (/proc/self/cwd is claude's directory to claude, the
// daemon's to the daemon): the gate cannot resolve them as the tool will,
// so they count as protected.
var opaque = []string{"/proc", "/dev/fd"}

// protects returns the protected path p is (or is under), symbolic links
// resolved as far as they exist, or "".
func (g *Guard) protects(raw string) string {
	p := path.Clean(raw)
	for _, o := range opaque {
		if p == o || strings.HasPrefix(p, o+"/") {
			return o
		}
	}
	for _, candidate := range []string{p, bash.Physical(raw)} {
		for _, prot := range g.Protected {
			if candidate == prot || strings.HasPrefix(candidate, strings.TrimSuffix(prot, "/")+"/") {
				return prot
			}
		}
	}
	return ""
}

// command says why a Bash command is one a session must not run, or "".
// It reads the words it can resolve (quotes removed) and, as a net under
// them, the raw text: a name of the gate's sockets or of a D-Bus click in
// it is enough.
func (g *Guard) command(script string, c Call) string {
	for _, s := range []string{"gate.sock", "approve.sock", "gate.lock", "ActionInvoked"} {
		if strings.Contains(script, s) {
			return "the command names " + s
		}
	}
	if g.Sockets != "" && strings.Contains(script, g.Sockets) {
		return "the command names the gate's socket directory"
	}
	// A decision anywhere in the text, as a word: in a string sh -c, eval
	// or an interpreter runs, it is as much the session's as on its own.
	words := strings.FieldsFunc(script, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '-' && r != '.'
	})
	for i := 0; i+1 < len(words); i++ {
		if words[i] == "toolgate" && guardDecisions[words[i+1]] {
			return "toolgate " + words[i+1] + " is for a person outside the session"
		}
	}
	// What the guard cannot read as bash does, it refuses: bash runs the
	// lines before a syntax error (a script of one line that does not
	// parse runs nothing), and the lines a comment or a here-document
	// hides from the parser (continuationDiffers), whatever the session's
	// policy would make of the script.
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true)).Parse(strings.NewReader(script), "")
	if err != nil && strings.ContainsAny(script, "\n\r") {
		return "the command does not parse as bash, which would still run its lines up to the error"
	}
	if err != nil {
		return ""
	}
	if why := bash.ContinuationDiffers(script, f); why != "" {
		return why
	}
	why := ""
	syntax.Walk(f, func(node syntax.Node) bool {
		switch n := node.(type) {
		case *syntax.CallExpr:
			why = g.call(n.Args, c)
			// What follows a cd runs there (in source order: a cd in a
			// subshell moves the rest too, which only denies more).
			if len(n.Args) > 1 && (guardWord(n.Args[0]) == "cd" || guardWord(n.Args[0]) == "pushd") {
				if dir := guardWord(n.Args[1]); dir != "" {
					c.Cwd = normalizePath(dir, c)
				}
			}
		case *syntax.Redirect:
			if w := guardWord(n.Word); w != "" {
				if hit := g.protects(rawPath(w, c)); hit != "" {
					why = "a redirection names " + w + ", under " + hit
				}
			}
		}
		return why == ""
	})
	return why
}

// call says why one simple command must not run, or "".
func (g *Guard) call(args []*syntax.Word, c Call) string {
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = guardWord(a)
	}
	for i, w := range words {
		if w == "" {
			continue
		}
		name := filepath.Base(w)
		if i == 0 && guardPrograms[name] {
			return name + " runs a command after the session, outside it"
		}
		if name == "toolgate" && i+1 < len(words) && guardDecisions[words[i+1]] {
			return "toolgate " + words[i+1] + " is for a person outside the session"
		}
		if name == "toolgate" && i+2 < len(words) && words[i+1] == "audit" && words[i+2] == "prune" {
			return "toolgate audit prune is for a person outside the session"
		}
		if strings.Contains(w, "/") || strings.HasPrefix(w, "~") {
			if hit := g.protects(rawPath(w, c)); hit != "" {
				return "the command names " + w + ", under " + hit
			}
		}
	}
	return ""
}

// guardWord is a word's value when it is known without running anything
// (quotes removed), or "".
func guardWord(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return ""
				}
				b.WriteString(lit.Value)
			}
		default:
			return ""
		}
	}
	return b.String()
}

// GuardPaths are what a guard protects for one session.
type GuardPaths struct {
	Gate      paths.Paths // toolgate's runtime and state directories, and its ledger
	ConfigDir string      // toolgate's configuration ($XDG_CONFIG_HOME/toolgate)
	Exe       string      // the toolgate executable; its hook beside it
	ClaudeDir string      // Claude Code's configuration (~/.claude, CLAUDE_CONFIG_DIR)
	Project   string      // the session's project: its .claude settings
	Extra     []string    // the session's policy file, what toolgate run gives claude
	// Writable, when set, are the only trees a write tool may write in
	// (the session's Bash boundary's): a file tool runs in claude, outside
	// that boundary, and the guard holds it to the same allow-list.
	Writable []string
}

// NewGuard is the guard of a session with these paths, and of Claude
// Code's managed settings (/etc/claude-code).
func NewGuard(gp GuardPaths) *Guard {
	g := &Guard{Sockets: gp.Gate.RuntimeDir}
	for _, w := range gp.Writable {
		w = path.Clean(w)
		g.Writable = append(g.Writable, w)
		if real := bash.ResolveLinks(w); real != w {
			g.Writable = append(g.Writable, real)
		}
	}
	add := func(p string) {
		if p == "" {
			return
		}
		p = path.Clean(p)
		g.Protected = append(g.Protected, p)
		if real := bash.ResolveLinks(p); real != p {
			g.Protected = append(g.Protected, real)
		}
	}
	for _, p := range []string{gp.Gate.RuntimeDir, gp.Gate.StateDir, gp.Gate.LedgerDir(), gp.ConfigDir, "/etc/claude-code"} {
		add(p)
	}
	if gp.Exe != "" {
		add(gp.Exe)
		add(filepath.Join(filepath.Dir(gp.Exe), "toolgate-hook"))
	}
	if gp.ClaudeDir != "" {
		add(filepath.Join(gp.ClaudeDir, "settings.json"))
		add(filepath.Join(gp.ClaudeDir, "settings.local.json"))
	}
	if gp.Project != "" {
		// The project's Claude Code configuration, all of it: its
		// settings, and the skills, agents, commands and MCP servers whose
		// hooks and programs the next session runs outside any sandbox.
		add(filepath.Join(gp.Project, ".claude"))
		add(filepath.Join(gp.Project, ".mcp.json"))
	}
	for _, p := range gp.Extra {
		add(p)
	}
	return g
}
