package bash

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// word walks what runs inside a word and returns what the shell makes of it.
func (w *walker) word(wd *syntax.Word) Word {
	if wd == nil {
		return Literal("")
	}
	w.expansions(wd)
	return resolve(wd, w.src)
}

// expansions walks what runs or is evaluated inside a word: the commands
// of $(...) and <(...), arithmetic, parameter expansions that do more than
// substitute a value.
func (w *walker) expansions(wd *syntax.Word) {
	if wd == nil {
		return // ${x/} has no pattern
	}
	for _, part := range wd.Parts {
		w.wordPart(part)
	}
}

func (w *walker) wordPart(part syntax.WordPart) {
	switch p := part.(type) {
	case *syntax.Lit, *syntax.SglQuoted, *syntax.ExtGlob:
	case *syntax.DblQuoted:
		for _, inner := range p.Parts {
			w.wordPart(inner)
		}
	case *syntax.CmdSubst:
		if p.TempFile || p.ReplyVar {
			w.s.setUnknown("a command substitution form bash does not have")
		}
		w.stmts(p.Stmts)
	case *syntax.ProcSubst:
		w.stmts(p.Stmts)
	case *syntax.ArithmExp:
		w.s.setUnsound("arithmetic expansion " + w.text(p) + " can run commands")
		w.arith(p.X)
	case *syntax.ParamExp:
		w.paramExp(p)
	default:
		w.s.setUnknown(fmt.Sprintf("the matcher does not know the word part %T", p))
	}
}

// paramExp walks ${...}: only $name and ${name} substitute a value and do
// nothing else.
func (w *walker) paramExp(p *syntax.ParamExp) {
	if p.Flags != nil || p.Width || p.IsSet || p.NestedParam != nil || len(p.Modifiers) > 0 ||
		p.Split != syntax.OptUnset || p.GlobSubst != syntax.OptUnset || p.RcExpand != syntax.OptUnset {
		w.s.setUnknown("an expansion form bash does not have: " + w.text(p))
		return
	}
	if p.Excl || p.Length || p.Index != nil || p.Slice != nil || p.Repl != nil || p.Names != 0 || p.Exp != nil {
		w.s.setUnsound("expansion " + w.text(p) + " can run code")
	}
	if p.Excl && p.Names == 0 {
		w.evalsVars = true // ${!x}: x's value names a variable, subscript included
	}
	if p.Index != nil && !allElements(p.Index) {
		w.arith(p.Index)
	}
	if p.Slice != nil {
		w.arith(p.Slice.Offset)
		if p.Slice.Length != nil {
			w.arith(p.Slice.Length)
		}
	}
	if p.Repl != nil {
		w.expansions(p.Repl.Orig)
		w.expansions(p.Repl.With)
	}
	if p.Exp != nil {
		w.paramOp(p.Exp)
	}
}

func (w *walker) paramOp(e *syntax.Expansion) {
	w.expansions(e.Word)
	switch e.Op {
	case syntax.AssignUnset, syntax.AssignUnsetOrNull:
		w.setsStrings = true
	case syntax.OtherParamOps:
		if e.Word != nil && e.Word.Lit() == "P" {
			w.evalsVars = true // ${x@P} expands the value as a prompt, $(...) included
		}
	}
}

// allElements reports whether an index is [@] or [*].
func allElements(x syntax.ArithmExpr) bool {
	wd, ok := x.(*syntax.Word)
	return ok && (wd.Lit() == "@" || wd.Lit() == "*")
}

// arith walks an arithmetic expression. Numbers and variable names are
// understood (a name's value is evaluated in turn: see evalsVars); a
// string, an expansion or a subscript can run commands (a[$(cmd)]).
func (w *walker) arith(x syntax.ArithmExpr) {
	switch x := x.(type) {
	case *syntax.BinaryArithm:
		w.arith(x.X)
		w.arith(x.Y)
	case *syntax.UnaryArithm:
		w.arith(x.X)
	case *syntax.ParenArithm:
		w.arith(x.X)
	case *syntax.Word:
		w.arithWord(x)
	default:
		w.s.setUnknown(fmt.Sprintf("the matcher does not know the arithmetic %T", x))
	}
}

func (w *walker) arithWord(wd *syntax.Word) {
	if len(wd.Parts) == 1 {
		switch p := wd.Parts[0].(type) {
		case *syntax.Lit:
			if isName(p.Value) {
				w.evalsVars = true
				return
			}
			if isNumber(p.Value) {
				return
			}
		case *syntax.ParamExp:
			if p.Param != nil && p.Index == nil && p.Exp == nil && p.Slice == nil && p.Repl == nil && !p.Excl && !p.Length {
				w.evalsVars = true // $x: its value is evaluated as arithmetic
				return
			}
		}
	}
	w.expansions(wd)
	w.s.setUnknown("arithmetic on " + w.text(wd) + " can run commands")
}

// isNumber reports whether s is an arithmetic constant: 42, 0x1f, 16#ff.
func isNumber(s string) bool {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '#' || c == '_' || c == '@') {
			return false
		}
	}
	return true
}

// test walks [[ ... ]]: -eq and friends evaluate both sides as arithmetic,
// -v and -R a variable name with its subscript.
func (w *walker) test(x syntax.TestExpr) {
	switch x := x.(type) {
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			w.arithOperand(x.X)
			w.arithOperand(x.Y)
		default:
			w.test(x.X)
			w.test(x.Y)
		}
	case *syntax.UnaryTest:
		if wd, ok := x.X.(*syntax.Word); ok && (x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar) {
			if v := w.word(wd); v.Known {
				w.name("[[ "+x.Op.String(), v)
			} else {
				w.evalsVars = true
			}
			return
		}
		w.test(x.X)
	case *syntax.ParenTest:
		w.test(x.X)
	case *syntax.Word:
		w.word(x)
	default:
		w.s.setUnknown(fmt.Sprintf("the matcher does not know the test %T", x))
	}
}

// arithOperand is a [[ ]] operand evaluated as arithmetic: its text is an
// expression, so a known string may still hold a subscript.
func (w *walker) arithOperand(x syntax.TestExpr) {
	wd, ok := x.(*syntax.Word)
	if !ok {
		w.test(x)
		return
	}
	v := w.word(wd)
	switch {
	case !v.Known:
		if len(wd.Parts) == 1 {
			if _, plain := wd.Parts[0].(*syntax.ParamExp); plain {
				w.evalsVars = true
				return
			}
		}
		w.s.setUnknown("arithmetic on " + v.Raw + " can run commands")
	case strings.Contains(v.Value, "["):
		w.s.setUnknown("arithmetic on " + v.Raw + " evaluates a subscript, which can run commands")
	case strings.IndexFunc(v.Value, func(r rune) bool { return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }) >= 0:
		w.evalsVars = true
	}
}

// decl walks declare, local, export, readonly, typeset: they set
// variables; -i makes every value arithmetic, -n every value a name.
func (w *walker) decl(c *syntax.DeclClause) {
	name := c.Variant.Value
	w.s.setUnsound("`" + name + "` sets shell variables")
	cmd := Command{Argv: []Word{Literal(name)}}
	var integer, nameref bool
	for _, a := range c.Args {
		if a.Naked && a.Name == nil {
			v := w.word(a.Value)
			cmd.Argv = append(cmd.Argv, v)
			switch {
			case !v.Known:
				w.evalsVars = true
			case strings.HasPrefix(v.Value, "-") || strings.HasPrefix(v.Value, "+"):
				integer = integer || strings.Contains(v.Value, "i")
				nameref = nameref || strings.Contains(v.Value, "n")
			default:
				w.name(name, v)
			}
			continue
		}
		w.setsStrings = true
		v := w.assign(a)
		cmd.Assigns = append(cmd.Assigns, v)
		if integer || nameref {
			w.declValue(name, v, nameref)
		}
	}
	cmd.Cands = []Candidate{{Argv: cmd.Argv}}
	w.s.Commands = append(w.s.Commands, cmd)
}

// declValue checks a value that declare -i evaluates as arithmetic, or
// that declare -n takes as a variable name.
func (w *walker) declValue(name string, v Word, nameref bool) {
	switch {
	case !v.Known:
		w.s.setUnknown("`" + name + "` evaluates " + v.Raw + ", only known at run time")
	case strings.Contains(v.Value, "["):
		w.s.setUnknown("`" + name + "` evaluates the subscript in " + v.Raw + ", which can run commands")
	case !nameref && !isNumber(v.Value):
		w.evalsVars = true
	}
}
