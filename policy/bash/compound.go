package bash

import (
	"fmt"

	"mvdan.cc/sh/v3/syntax"
)

// pipeline walks a | b | c. Bash reads time as a keyword only at the start
// of a pipeline: later on (a | time b) it is the program time.
func (w *walker) pipeline(c *syntax.BinaryCmd) {
	for i, st := range pipeElements(c, nil) {
		if tc, ok := st.Cmd.(*syntax.TimeClause); ok && i > 0 && !st.Negated {
			for _, r := range st.Redirs {
				w.redirect(r)
			}
			w.timeProgram(tc)
			continue
		}
		w.stmt(st)
	}
}

// pipeElements flattens nested pipes into their elements, in order.
func pipeElements(c *syntax.BinaryCmd, out []*syntax.Stmt) []*syntax.Stmt {
	for _, st := range []*syntax.Stmt{c.X, c.Y} {
		inner, ok := st.Cmd.(*syntax.BinaryCmd)
		if ok && (inner.Op == syntax.Pipe || inner.Op == syntax.PipeAll) && !st.Negated && len(st.Redirs) == 0 {
			out = pipeElements(inner, out)
			continue
		}
		out = append(out, st)
	}
	return out
}

// timeProgram records "time [-p] cmd args" as the program time.
func (w *walker) timeProgram(tc *syntax.TimeClause) {
	argv := []Word{Literal("time")}
	if tc.PosixFormat {
		argv = append(argv, Literal("-p"))
	}
	inner := tc.Stmt
	if inner == nil {
		w.addCommand(Command{Argv: argv}, &syntax.Stmt{})
		return
	}
	for _, r := range inner.Redirs {
		w.redirect(r)
	}
	call, ok := inner.Cmd.(*syntax.CallExpr)
	if inner.Cmd != nil && (!ok || len(call.Assigns) > 0 || inner.Negated) {
		w.s.setUnknown("`time` inside a pipeline runs the program time with what follows")
		w.stmt(inner)
		return
	}
	if ok {
		argv = w.words(call.Args, argv)
	}
	w.addCommand(Command{Argv: argv}, inner)
}

// construct handles what the allow side never accepts: the deny side still
// looks inside for commands.
func (w *walker) construct(c syntax.Command) {
	switch c := c.(type) {
	case *syntax.FuncDecl:
		w.s.setUnsound("a function definition changes what later commands mean")
		w.loop++
		w.stmt(c.Body)
		w.loop--
	case *syntax.CoprocClause:
		w.s.setUnsound("`coproc` runs a command beside the shell")
		w.stmt(c.Stmt)
	case *syntax.LetClause:
		w.s.setUnsound("`let` evaluates arithmetic that can run commands")
		for _, x := range c.Exprs {
			w.arith(x)
		}
	case *syntax.ArithmCmd:
		w.s.setUnsound("`(( ))` evaluates arithmetic that can run commands")
		w.arith(c.X)
	case *syntax.TestClause:
		w.s.setUnsound("`[[ ]]` can evaluate arithmetic that runs commands")
		w.test(c.X)
	case *syntax.DeclClause:
		w.decl(c)
	default:
		w.s.setUnknown(fmt.Sprintf("the matcher does not know the construct %T", c))
	}
}

func (w *walker) ifClause(c *syntax.IfClause) {
	for ; c != nil; c = c.Else {
		w.stmts(c.Cond)
		w.stmts(c.Then)
	}
}

func (w *walker) forClause(c *syntax.ForClause) {
	if c.Select {
		w.s.setUnsound("`select` reads a choice from standard input")
	}
	switch l := c.Loop.(type) {
	case *syntax.WordIter:
		w.setsStrings = true // the loop variable holds each item
		items := make([]Word, 0, len(l.Items))
		for _, item := range l.Items {
			w.word(item)
			items = append(items, resolve(item, w.src))
		}
		w.s.addLoop(l.Name.Value, items)
	case *syntax.CStyleLoop:
		w.s.setUnsound("a C-style for loop evaluates arithmetic that can run commands")
		for _, x := range []syntax.ArithmExpr{l.Init, l.Cond, l.Post} {
			if x != nil {
				w.arith(x)
			}
		}
	default:
		w.s.setUnknown(fmt.Sprintf("the matcher does not know the loop %T", l))
	}
	w.loop++
	w.stmts(c.Do)
	w.loop--
}

func (w *walker) caseClause(c *syntax.CaseClause) {
	w.word(c.Word)
	for _, item := range c.Items {
		for _, p := range item.Patterns {
			w.expansions(p)
		}
		w.stmts(item.Stmts)
	}
}
