package tracetest

import (
	"strconv"
	"strings"
)

// argParser reads the arguments of one strace line: C strings ("a\n"),
// lists of them (["ls", "-a"]) and bare tokens (AT_FDCWD, 0x7ff...).
type argParser struct{ s string }

func (p *argParser) trim() {
	p.s = strings.TrimLeft(p.s, " ,")
}

// str reads a C string, or a bare token when the argument is not one.
func (p *argParser) str() string {
	p.trim()
	if !strings.HasPrefix(p.s, `"`) {
		return p.token()
	}
	var b strings.Builder
	i := 1
	for i < len(p.s) && p.s[i] != '"' {
		c := p.s[i]
		if c != '\\' || i+1 >= len(p.s) {
			b.WriteByte(c)
			i++
			continue
		}
		i += unescape(&b, p.s[i+1:]) + 1
	}
	p.s = strings.TrimPrefix(p.s[min(i+1, len(p.s)):], "...")
	return b.String()
}

// unescape writes one escaped character and returns how many bytes of s
// (after the backslash) it used.
func unescape(b *strings.Builder, s string) int {
	switch s[0] {
	case 'n':
		b.WriteByte('\n')
	case 't':
		b.WriteByte('\t')
	case 'r':
		b.WriteByte('\r')
	case 'v':
		b.WriteByte('\v')
	case 'f':
		b.WriteByte('\f')
	case 'x':
		if len(s) >= 3 {
			if v, err := strconv.ParseUint(s[1:3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				return 3
			}
		}
		b.WriteByte('x')
	default:
		n := 0
		for n < 3 && n < len(s) && s[n] >= '0' && s[n] <= '7' {
			n++
		}
		if n == 0 {
			b.WriteByte(s[0]) // \" \\
			return 1
		}
		v, _ := strconv.ParseUint(s[:n], 8, 8)
		b.WriteByte(byte(v))
		return n
	}
	return 1
}

// list reads ["a", "b"]; an abbreviated list ends with "...".
func (p *argParser) list() []string {
	p.trim()
	if !strings.HasPrefix(p.s, "[") {
		p.token()
		return nil
	}
	p.s = p.s[1:]
	var out []string
	for {
		p.trim()
		switch {
		case p.s == "":
			return out
		case strings.HasPrefix(p.s, "]"):
			p.s = p.s[1:]
			return out
		case strings.HasPrefix(p.s, "..."):
			out = append(out, "...")
			p.s = p.s[3:]
		default:
			out = append(out, p.str())
		}
	}
}

// token reads a bare argument up to the next comma or closing parenthesis.
func (p *argParser) token() string {
	end := strings.IndexAny(p.s, ",)")
	if end < 0 {
		end = len(p.s)
	}
	tok := strings.TrimSpace(p.s[:end])
	p.s = p.s[end:]
	return tok
}

// skip drops one argument.
func (p *argParser) skip() { p.str() }

// rest is what remains of the line, flags and result included.
func (p *argParser) rest() string { return p.s }
