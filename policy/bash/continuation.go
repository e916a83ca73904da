package bash

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The parser the matcher uses (mvdan.cc/sh) and bash disagree on where a
// backslash before a line's end joins two lines, and where they disagree
// a command can hide from the matcher in what it reads as one line while
// bash runs it:
//
//   - A comment ends at the newline in bash, backslash or not: in
//     `ls # \⏎rm -rf ~` bash runs rm; the parser reads one comment.
//   - In the body of a here-document with an unquoted delimiter, bash
//     joins a line ending in a backslash with the next before it compares
//     the line with the delimiter, so `EO\⏎F` ends the here-document
//     there and what follows runs; the parser does not always join.
//   - A backslash before CR LF escapes the CR in bash, and the newline
//     ends the command; the parser reads a line continuation.
//
// continuationDiffers finds each of these in a parsed script, so that the
// script is unknown: no allow vouches for it, every deny and ask matches.

// ContinuationDiffers says where bash would read the lines of src, which
// parsed as f (with its comments kept), otherwise than the matcher, or "".
func ContinuationDiffers(src string, f *syntax.File) string {
	if strings.Contains(src, "\\\r\n") {
		return "a backslash before CR LF: bash escapes the CR and ends the line there, where the matcher reads one line"
	}
	var why string
	syntax.Walk(f, func(n syntax.Node) bool {
		if why != "" {
			return false
		}
		switch n := n.(type) {
		case *syntax.Comment:
			if text, ok := span(src, n); ok && strings.Contains(text, "\n") {
				why = "a comment ends in a backslash: bash ends the comment at the newline and runs the next line, which the matcher reads as the comment's"
			}
		case *syntax.Redirect:
			if (n.Op == syntax.Hdoc || n.Op == syntax.DashHdoc) && n.Hdoc != nil && !hereDocEndAgrees(src, n) {
				why = "a here-document whose lines end in a backslash: bash joins them before it looks for the delimiter, and ends the here-document elsewhere than the matcher"
			}
		}
		return true
	})
	return why
}

// span is the text of src a node covers.
func span(src string, n syntax.Node) (string, bool) {
	from, to := int(n.Pos().Offset()), int(n.End().Offset())
	if from < 0 || to > len(src) || from > to {
		return "", false
	}
	return src[from:to], true
}

// hereDocEndAgrees reports whether bash ends the here-document r where the
// parser did. A quoted delimiter (any quote or backslash in it) joins no
// lines, in bash as in the parser.
func hereDocEndAgrees(src string, r *syntax.Redirect) bool {
	delim := r.Word.Lit()
	if delim == "" || strings.ContainsAny(delim, `\'"`) {
		return true
	}
	from, to := int(r.Hdoc.Pos().Offset()), int(r.Hdoc.End().Offset())
	if from < 0 || to > len(src) || from > to {
		return false
	}
	// Read logical lines as bash does: every backslash before a newline
	// goes, with the newline (bash does not look at the backslash before
	// it); with <<-, leading tabs go from each logical line.
	pos := from
	for pos < len(src) {
		var line strings.Builder
		for {
			nl := strings.IndexByte(src[pos:], '\n')
			if nl < 0 {
				line.WriteString(src[pos:])
				pos = len(src)
				break
			}
			phys := src[pos : pos+nl]
			pos += nl + 1
			if strings.HasSuffix(phys, `\`) {
				line.WriteString(phys[:len(phys)-1])
				continue
			}
			line.WriteString(phys)
			pos-- // at the newline that ends the logical line
			break
		}
		text := line.String()
		if r.Op == syntax.DashHdoc {
			text = strings.TrimLeft(text, "\t")
		}
		if text == delim {
			return pos == to
		}
		if pos < len(src) {
			pos++ // past the newline
		}
	}
	return false // bash reads to the end of the script
}
