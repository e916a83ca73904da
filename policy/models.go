package policy

import "strings"

// An allow rule that names a program allows it with the options known
// not to run code, write files or read beyond the program's arguments,
// and no other: `git log --output=~/.bashrc` writes a file, `rg --pre=rm`
// runs a program on every file it searches, `go test -exec sh` runs one,
// and a rule that allows git log, rg or go test means none of that. A
// model lists, for one program (and subcommand), the options it takes
// that are known to be safe; any other option, an abbreviation included,
// makes the allow miss. Options a rule's prefix itself names are the
// rule author's, and stand. Programs without a model (ls, cat, wc ...)
// have no option that writes or runs anything.
//
// What git, go and make do also comes from files the model can write
// (.git/config, go.mod's toolchain line, a Makefile, the test code
// itself): no option model makes those safe; only the boundary around
// what the session's commands may write does.

// optionModel is what one program takes safely.
type optionModel struct {
	// goFlags: options are Go flags (-name, --name, -name=value), not
	// getopt's clusters of letters.
	goFlags bool
	// short are the safe single-letter options (getopt style); valued
	// are those of them that take a value, which may follow in the same
	// word (-A3) or be the next word.
	short, valued string
	// long are the safe long options, without their dashes (and the Go
	// flags, for goFlags).
	long map[string]bool
	// counts: -N is a number of entries (git log -5).
	counts bool
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// gitReadOptions are the options of git log, show and diff that only
// choose what to read and how to print it. Not among them: --output
// (writes a file), --ext-diff and --textconv (run a program),
// --show-signature (runs gpg), --no-index (compares any two files), -O
// (reads an order file).
var gitReadOptions = set("p", "patch", "u", "s", "no-patch", "stat", "numstat", "shortstat", "name-only",
	"name-status", "summary", "raw", "oneline", "graph", "decorate", "no-decorate", "all", "branches", "tags",
	"remotes", "max-count", "skip", "since", "after", "until", "before", "author", "committer", "grep",
	"regexp-ignore-case", "extended-regexp", "fixed-strings", "all-match", "invert-grep", "format", "pretty",
	"abbrev-commit", "no-abbrev-commit", "abbrev", "date", "reverse", "first-parent", "merges", "no-merges",
	"follow", "find-renames", "find-copies", "no-renames", "cached", "staged", "color", "no-color",
	"word-diff", "color-words", "ignore-space-change", "ignore-all-space", "ignore-blank-lines",
	"ignore-space-at-eol", "unified", "diff-filter", "no-ext-diff", "no-textconv", "exit-code", "quiet",
	"check", "full-index", "relative", "minimal", "patience", "histogram", "diff-algorithm", "dirstat",
	"pickaxe-all", "pickaxe-regex", "left-right", "cherry-pick", "cherry-mark", "boundary", "topo-order",
	"date-order", "author-date-order", "no-walk", "ignore-submodules", "submodule", "src-prefix",
	"dst-prefix", "no-prefix", "merge-base", "name-rev", "source", "log-size", "parents", "children",
	"simplify-by-decoration", "full-history", "ancestry-path", "no-color-moved", "color-moved", "stat-width",
	"compact-summary", "function-context", "inter-hunk-context", "text", "binary", "no-notes", "notes",
	"show-notes", "standard-notes", "mailmap", "no-mailmap", "use-mailmap", "encoding", "expand-tabs",
	"no-expand-tabs", "max-parents", "min-parents", "no-min-parents", "no-max-parents", "not", "first-parent",
	"ignore-cr-at-eol", "ita-invisible-in-index", "indent-heuristic", "no-indent-heuristic", "anchored",
	"exclude", "glob", "since-as-filter", "remerge-diff", "diff-merges", "combined-all-paths", "cc", "m",
	"dd", "no-standard-notes", "default-prefix")

// models are the option models of the programs the shipped policies allow
// and the ones people allow next, by program and subcommand.
var models = map[string]optionModel{
	"git status": {short: "sbvuz", valued: "u", long: set("short", "branch", "porcelain", "long", "verbose",
		"untracked-files", "ignored", "ignore-submodules", "column", "no-column", "ahead-behind",
		"no-ahead-behind", "renames", "no-renames", "find-renames", "show-stash", "null")},
	"git log":  {short: "puszinEFiCMSGLbwURWa", valued: "nUCMSGL", long: gitReadOptions, counts: true},
	"git show": {short: "puszinEFiCMSGLbwURWa", valued: "nUCMSGL", long: gitReadOptions, counts: true},
	"git diff": {short: "puszinCMSGbwURWa", valued: "UCMSG", long: gitReadOptions},
	// Not among go test's and go build's: -exec and -toolexec (run a
	// program), -o and the profiles (write files anywhere), -c (writes the
	// test binary), -mod (-mod=mod rewrites go.mod), -ldflags, -gcflags,
	// -asmflags and the compilers' (-extld runs a program), -overlay,
	// -modfile, -pkgdir, -C (read or build from elsewhere). What follows
	// go test's -args goes to the test binary, whose own flags write files
	// (-test.cpuprofile): they must be safe flags too, so that a rule's
	// allow of go test takes none of them.
	"go test": {goFlags: true, long: set("v", "run", "skip", "count", "short", "timeout", "race",
		"cover", "covermode", "coverpkg", "bench", "benchtime", "benchmem", "failfast", "json", "p", "parallel",
		"cpu", "shuffle", "tags", "trimpath", "vet", "list", "fuzz", "fuzztime", "fuzzminimizetime", "x",
		"n", "a", "work", "buildvcs", "args", "fullpath")},
	"go build": {goFlags: true, long: set("v", "race", "cover", "covermode", "coverpkg", "tags", "trimpath",
		"x", "n", "a", "p", "work", "buildvcs", "msan", "asan")},
	"go vet": {goFlags: true, long: set("v", "tags", "json", "c", "x", "n", "a", "p", "trimpath")},
	// Not among rg's: --pre and --pre-glob (run a program on each file),
	// -z/--search-zip (run decompressors), -f/--file (patterns from any
	// file).
	"rg": {short: "iSswxvnNlcCABgtTFeuLmdHIoqrPUajE0hVM", valued: "CABgtTemdrjEM", long: set("ignore-case",
		"smart-case", "case-sensitive", "word-regexp", "line-regexp", "invert-match", "line-number",
		"no-line-number", "files-with-matches", "files-without-match", "count", "count-matches", "context",
		"after-context", "before-context", "glob", "iglob", "glob-case-insensitive", "type", "type-not",
		"type-list", "fixed-strings", "regexp", "hidden", "no-ignore", "no-ignore-vcs", "no-ignore-parent",
		"no-ignore-dot", "no-ignore-global", "no-ignore-exclude", "follow", "max-count", "max-depth", "files",
		"json", "color", "colors", "heading", "no-heading", "with-filename", "no-filename", "only-matching",
		"replace", "pcre2", "multiline", "multiline-dotall", "sort", "sortr", "stats", "trim", "vimgrep",
		"null", "column", "threads", "max-filesize", "binary", "text", "no-messages", "quiet", "encoding",
		"passthru", "no-config", "one-file-system", "max-columns", "max-columns-preview", "unrestricted",
		"no-unicode", "crlf", "null-data", "line-buffered", "block-buffered", "byte-offset", "pretty",
		"help", "version", "engine", "auto-hybrid-regex", "path-separator", "field-match-separator",
		"field-context-separator", "no-require-git", "include-zero", "ignore-file-case-insensitive")},
	// Not among grep's: -f/--file (patterns from any file).
	"grep": {short: "ivwxclLnhHoqsrREFGPeABCmIazZbTUdD", valued: "eABCmdD", long: set("ignore-case",
		"no-ignore-case", "invert-match", "word-regexp", "line-regexp", "count", "files-with-matches",
		"files-without-match", "line-number", "no-filename", "with-filename", "only-matching", "quiet", "silent",
		"no-messages", "recursive", "dereference-recursive", "extended-regexp", "fixed-strings", "basic-regexp",
		"perl-regexp", "regexp", "after-context", "before-context", "context", "max-count", "include",
		"exclude", "exclude-dir", "color", "colour", "text", "null", "null-data", "byte-offset",
		"line-buffered", "label", "initial-tab", "binary", "binary-files", "devices", "directories", "help",
		"version")},
}

// modelOf is the option model of a program's words, and how many words
// name it (git log: 2), or false.
func modelOf(argv []word) (optionModel, int, bool) {
	if len(argv) == 0 || !argv[0].known {
		return optionModel{}, 0, false
	}
	name := argv[0].s
	if m, ok := models[name]; ok {
		return m, 1, true
	}
	if len(argv) > 1 && argv[1].known {
		if m, ok := models[name+" "+argv[1].s]; ok {
			return m, 2, true
		}
	}
	return optionModel{}, 0, false
}

// unsafeOption is the first option of argv, from word from on, that the
// program's model does not know to be safe, or "". A word only known at
// run time may be any option.
//
// Every word that starts with - must be a safe option, even after -- and
// where it may be an option's value: whether a program reads a word as an
// option or as the value of the one before depends on that option (go's
// -run takes -- or -args as its value and goes on reading flags; grep's
// -e takes --), and a word read as an option it is not only makes the
// allow miss. A value that starts with - (grep -e -x) makes it miss too.
func (m optionModel) unsafeOption(argv []word, from int) string {
	for i := from; i < len(argv); i++ {
		w := argv[i]
		if !w.known {
			return w.raw
		}
		s := w.s
		switch {
		case len(s) < 2 || s[0] != '-':
			continue // an argument, or an option's value
		case s == "--":
			continue
		case m.goFlags:
			name, _, _ := strings.Cut(strings.TrimPrefix(s[1:], "-"), "=")
			if !m.long[name] {
				return s
			}
		case s[1] == '-':
			name, _, _ := strings.Cut(s[2:], "=")
			if !m.long[name] {
				return s
			}
		case m.counts && allDigits(s[1:]):
		default:
			for j := 1; j < len(s); j++ {
				c := s[j]
				if strings.IndexByte(m.short, c) < 0 {
					return s
				}
				if strings.IndexByte(m.valued, c) >= 0 {
					break // the rest of the word is the value
				}
			}
		}
	}
	return ""
}
