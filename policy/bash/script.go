package bash

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Script is what the matcher learned from one command line, before the
// shell runs it.
type Script struct {
	// Unknown says why the script may run commands the matcher cannot see
	// (python -c, source, a script that does not parse): deny and ask
	// rules match it whatever their prefixes. "" when every command is seen.
	Unknown string
	// Unsound says why an allow rule cannot vouch for the script: a
	// construct outside the list the allow side understands, a redirection
	// into a file, a word only known at run time. Every unknown script is
	// also unsound.
	Unsound   string
	Commands  []Command
	Redirs    []Word // the files redirections read or write
	dirs      cwdSet // where relative paths may resolve
	rootMoved bool   // chroot and friends: absolute paths resolve elsewhere
	// src is the command line, loops the for loops' variables with their
	// items (loopvars.go).
	src   string
	loops map[string][]Word
	// resolvedPaths memoizes physical for the script's paths.
	resolvedPaths map[string]string
	// Dotglob: a glob may match names that start with a dot; the script
	// may turn bash's dotglob on (shopt, GLOBIGNORE, BASHOPTS anywhere in
	// it, as a command, a word or a string).
	Dotglob bool
}

// Command is one command the shell (or a program it starts) runs.
type Command struct {
	Argv    []Word
	Assigns []Word      // the values of NAME=value words before the command
	Cands   []Candidate // argv, then what each wrapper in it runs
}

// Candidate is one program and its arguments that a simple command runs:
// the command itself, or what a wrapper runs (sudo rm x: rm x).
type Candidate struct {
	Argv      []Word
	StdinArgs bool // more arguments come from standard input (xargs)
	// ScriptFile: a script file an interpreter runs (bash deploy.sh). Deny
	// and ask rules match it like a program; allow rules do not need to.
	ScriptFile bool
}

func (s *Script) setUnknown(why string) {
	if s.Unknown == "" {
		s.Unknown = why
	}
	s.setUnsound(why)
}

func (s *Script) setUnsound(why string) {
	if s.Unsound == "" {
		s.Unsound = why
	}
}

// matcherFailed starts the reason of a script the walk failed on.
const matcherFailed = "the matcher failed on this script"

// MaxNesting bounds bash -c inside bash -c: deeper scripts are not understood.
const MaxNesting = 8

// Parse analyses a command line for the session's working directory
// and home.
func Parse(src, cwd, home string) (s *Script) {
	s = &Script{src: src, Dotglob: strings.Contains(src, "shopt") || strings.Contains(src, "GLOBIGNORE") || strings.Contains(src, "BASHOPTS")}
	defer func() {
		if r := recover(); r != nil { // a bug in the walk must not loosen a decision
			s = &Script{}
			s.setUnknown(fmt.Sprintf("%s: %v", matcherFailed, r))
		}
	}()
	if strings.IndexByte(src, 0) >= 0 {
		// No shell gets a NUL byte through; one that drops it runs
		// something other than what the matcher would read.
		s.setUnknown("the script holds a NUL byte")
		return s
	}
	w := &walker{s: s, home: home}
	w.parse(src, "")
	s.dirs = w.cwds.resolve(cwd, home, strings.Contains(src, "CDPATH") || w.cdpath)
	if w.evalsVars && w.setsStrings {
		s.setUnknown("arithmetic or ${!x} reads a variable the script sets to a string, which can run commands")
	}
	return s
}

// walker visits a parsed script node by node. Every construct it does not
// know makes the script unsound, and unknown when commands could hide in it.
type walker struct {
	s     *Script
	src   string // the text being walked, for explanations
	home  string
	depth int
	loop  int // inside a loop, a function body or a trap: commands may repeat

	cwds        cwdOps
	cdpath      bool // a word names CDPATH or cdable_vars: cd may go anywhere
	evalsVars   bool // arithmetic or ${!x} reads a variable's value as code
	setsStrings bool // the script puts a non-number into a variable
}

// parse walks src as a nested script; what names the interpreter ("bash
// -c") for explanations, "" for the top level.
func (w *walker) parse(src, what string) {
	if w.depth > MaxNesting {
		w.s.setUnknown("scripts nest more than 8 deep")
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true)).Parse(strings.NewReader(src), "")
	if err != nil {
		if what == "" {
			w.s.setUnknown("the script does not parse: " + err.Error())
		} else {
			w.s.setUnknown("the script given to " + what + " does not parse")
		}
		return
	}
	if why := ContinuationDiffers(src, f); why != "" {
		w.s.setUnknown(why)
	}
	src, w.src = w.src, src
	w.depth++
	w.stmts(f.Stmts)
	w.src = src
	w.depth--
}

func (w *walker) stmts(list []*syntax.Stmt) {
	for _, st := range list {
		w.stmt(st)
	}
}

func (w *walker) stmt(st *syntax.Stmt) {
	if st == nil {
		return
	}
	if st.Coprocess || st.Disown {
		w.s.setUnknown("a statement form bash does not have")
	}
	for _, r := range st.Redirs {
		w.redirect(r)
	}
	w.command(st.Cmd, st)
}

func (w *walker) command(c syntax.Command, st *syntax.Stmt) {
	switch c := c.(type) {
	case nil: // redirections alone: > file
	case *syntax.CallExpr:
		w.call(c, st)
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			w.pipeline(c)
			break
		}
		w.stmt(c.X) // && ||
		w.stmt(c.Y)
	case *syntax.Subshell:
		w.stmts(c.Stmts)
	case *syntax.Block:
		w.stmts(c.Stmts)
	case *syntax.IfClause:
		w.ifClause(c)
	case *syntax.WhileClause:
		w.loop++
		w.stmts(c.Cond)
		w.stmts(c.Do)
		w.loop--
	case *syntax.ForClause:
		w.forClause(c)
	case *syntax.CaseClause:
		w.caseClause(c)
	case *syntax.TimeClause:
		w.stmt(c.Stmt)
	default:
		w.construct(c)
	}
}

// redirect checks one redirection: the allow side accepts only /dev/null as
// a file to write, and fd duplication to a number.
func (w *walker) redirect(r *syntax.Redirect) {
	if r.N != nil && !AllDigits(r.N.Value) {
		w.s.setUnsound(fmt.Sprintf("redirection %s assigns a variable", r.N.Value))
	}
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		if r.Hdoc != nil {
			w.expansions(r.Hdoc)
		}
		return
	case syntax.WordHdoc:
		w.word(r.Word)
		return
	}
	target := w.word(r.Word)
	switch r.Op {
	case syntax.DplIn, syntax.DplOut:
		if target.Known && (AllDigits(strings.TrimSuffix(target.Value, "-")) || target.Value == "-") {
			return
		}
	}
	w.s.Redirs = append(w.s.Redirs, target)
	switch {
	case !target.Known:
		w.s.setUnsound(fmt.Sprintf("redirection target %s is only known at run time", target.Raw))
	case r.Op == syntax.RdrIn:
		if strings.HasPrefix(target.Value, "/dev/tcp/") || strings.HasPrefix(target.Value, "/dev/udp/") {
			w.s.setUnsound("redirection opens a network connection: " + target.Value)
		}
	case r.Op == syntax.DplIn:
		w.s.setUnsound(fmt.Sprintf("redirection <&%s does not name a file descriptor", target.Value))
	case target.Value != "/dev/null":
		w.s.setUnsound("redirection writes to " + target.Value)
	}
}

// AllDigits reports whether s is a non-empty run of ASCII digits (a file
// descriptor, an option's count).
func AllDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
