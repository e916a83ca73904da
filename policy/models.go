package policy

import (
	"strings"

	"github.com/toolgate/toolgate/policy/bash"
)

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
	// operands, when not 0, is how many arguments the program takes
	// safely: uniq's second writes a file.
	operands int
	// noAssign: an argument holding = sets a variable the program runs
	// (make CC=sh, make SHELL=...).
	noAssign bool
	// noRefspec: an argument holding : or starting with + is a refspec
	// that writes local branches (git fetch . +HEAD~1:main).
	noRefspec bool
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

func init() {
	gitRead := optionModel{short: "puszinEFiCMSGLbwURWa", valued: "nUCMSGL", long: gitReadOptions, counts: true}
	more := map[string]optionModel{
		"git stash list": gitRead,
		"git rev-parse": {short: "q", long: set("show-toplevel", "abbrev-ref", "short", "git-dir", "git-common-dir",
			"is-inside-work-tree", "is-inside-git-dir", "is-bare-repository", "verify", "quiet", "symbolic-full-name",
			"show-prefix", "show-cdup", "absolute-git-dir", "all", "branches", "tags", "remotes", "revs-only",
			"no-revs", "flags", "no-flags", "sq", "show-object-format", "path-format", "symbolic")},
		"git branch": {short: "avrl", long: set("all", "remotes", "list", "verbose", "show-current", "contains",
			"no-contains", "merged", "no-merged", "points-at", "sort", "format", "color", "no-color", "column",
			"no-column", "abbrev", "no-abbrev", "ignore-case")},
		"git tag": {short: "ln", long: set("list", "sort", "contains", "no-contains", "merged", "no-merged",
			"points-at", "format", "column", "no-column", "ignore-case", "color")},
		// Not among git grep's: -O (runs a pager on the files), --textconv,
		// --untracked and --no-exclude-standard (search what .gitignore
		// keeps out, .env among it).
		"git grep": {short: "niwvlLcEFPhHoqrIezABC", valued: "eABC", long: set("line-number", "ignore-case",
			"word-regexp", "invert-match", "files-with-matches", "files-without-match", "count", "extended-regexp",
			"fixed-strings", "perl-regexp", "basic-regexp", "cached", "recurse-submodules", "heading",
			"break", "show-function", "function-context", "context", "after-context", "before-context", "max-depth",
			"only-matching", "quiet", "all-match", "and", "or", "not", "color", "no-color", "column", "null",
			"full-name", "name-only", "text", "threads", "exclude-standard", "max-count")},
		"git blame": {short: "lstfnpewcCMLS", valued: "LS", long: set("porcelain", "line-porcelain", "incremental",
			"root", "show-stats", "show-name", "show-number", "show-email", "ignore-rev", "ignore-revs-file",
			"color-lines", "color-by-age", "minimal", "reverse", "first-parent", "encoding", "contents", "date",
			"abbrev")},
		// Not among git add's: -f and --force (stage what .gitignore keeps
		// out, .env among them, for git diff --cached to print).
		"git add": {short: "AunvN", long: set("all", "update", "dry-run", "verbose", "intent-to-add",
			"ignore-removal", "no-all", "renormalize", "ignore-errors", "sparse")},
		"git commit": {short: "amqsvnF", valued: "mF", long: set("message", "all", "amend", "no-edit", "quiet",
			"signoff", "verbose", "allow-empty", "allow-empty-message", "author", "date", "file", "only",
			"include", "fixup", "squash", "reset-author", "cleanup", "trailer", "dry-run", "short", "porcelain",
			"status", "no-status")},
		// Not among git switch's and checkout -b's: -f, --discard-changes,
		// --merge, --orphan and -C, which throw work away.
		"git switch":   {short: "cdq", valued: "c", long: set("create", "detach", "track", "no-track", "guess", "no-guess", "quiet")},
		"git checkout": {short: "bq", valued: "b", long: set("track", "no-track", "quiet")},
		// Not among git fetch's and pull's: --upload-pack (runs a program),
		// -s and -X (merge strategies).
		// nor -f and a refspec argument (+src:dst), which reset or delete
		// local branches.
		"git fetch": {short: "aptvqj", valued: "j", long: set("all", "prune", "prune-tags", "tags", "no-tags", "verbose",
			"quiet", "depth", "shallow-since", "unshallow", "dry-run", "jobs", "multiple", "progress", "atomic"),
			noRefspec: true},
		"git pull": {short: "vqr", long: set("ff-only", "ff", "no-ff", "rebase", "no-rebase", "verbose", "quiet",
			"tags", "no-tags", "autostash", "no-autostash", "prune", "depth", "stat", "no-stat"), noRefspec: true},
		"go version": {goFlags: true, long: set("m", "v")},
		// Not among go env's: -w and -u (write go's configuration).
		"go env":      {goFlags: true, long: set("json", "changed")},
		"go mod tidy": {goFlags: true, long: set("v", "e", "go", "compat", "x", "diff")},
		// Not among gofmt's: -w (rewrites the files).
		"gofmt": {goFlags: true, long: set("l", "d", "s", "e", "r")},
		// Not among find's: -delete, -fprint, -fprint0, -fprintf, -fls
		// (delete or write files). What -exec, -execdir, -ok and -okdir
		// run is a program of the script, allowed in turn or not.
		"find": {goFlags: true, long: set("name", "iname", "path", "ipath", "wholename", "iwholename", "regex",
			"iregex", "regextype", "type", "xtype", "newer", "anewer", "cnewer", "mtime", "mmin", "atime", "amin",
			"ctime", "cmin", "size", "empty", "maxdepth", "mindepth", "print", "print0", "printf", "prune", "not",
			"o", "a", "and", "or", "follow", "L", "H", "P", "depth", "quit", "perm", "user", "group", "nouser",
			"nogroup", "readable", "writable", "executable", "samefile", "links", "inum", "lname", "ilname", "ls",
			"true", "false", "xdev", "mount", "noleaf", "daystart", "used", "exec", "execdir", "ok", "okdir")},
		// Not among sort's: -o (writes a file), --compress-program (runs
		// one), -T (writes in a directory).
		"sort": {short: "bdfgiMhnRrVcCsuzkt", valued: "kt", long: set("ignore-leading-blanks", "dictionary-order",
			"ignore-case", "general-numeric-sort", "ignore-nonprinting", "month-sort", "human-numeric-sort",
			"numeric-sort", "random-sort", "reverse", "version-sort", "check", "unique", "zero-terminated", "key",
			"field-separator", "stable", "merge", "parallel", "buffer-size", "debug")},
		// uniq's second argument is a file it writes.
		"uniq": {short: "cdDiuzfsw", valued: "fsw", long: set("count", "repeated", "all-repeated", "ignore-case",
			"unique", "zero-terminated", "skip-fields", "skip-chars", "check-chars", "group"), operands: 1},
		// Not among tree's: -o (writes a file).
		"tree": {short: "adlfixLPIshuDFCnrtvpgJ", valued: "LPI", long: set("noreport", "dirsfirst", "gitignore",
			"charset", "filelimit", "prune", "matchdirs", "du", "si", "sort", "version")},
		// Not among file's: -C (writes a compiled magic file), -m and -f
		// (read lists from files).
		"file": {short: "bLhiNkrszZ0", long: set("brief", "mime", "mime-type", "mime-encoding", "dereference",
			"no-dereference", "keep-going", "raw", "special-files", "uncompress", "print0")},
		// Not among make's: -f and --eval (a makefile or rules from
		// anywhere, standard input included), -C and -I (another
		// directory), -o, -W, -e; nor a VAR=value argument (make SHELL=...).
		"make": {short: "jksBnqrRwi", valued: "j", long: set("jobs", "keep-going", "silent", "quiet",
			"always-make", "just-print", "dry-run", "question", "no-builtin-rules", "no-builtin-variables",
			"print-directory", "no-print-directory", "ignore-errors", "output-sync"), noAssign: true},
	}
	// The project's own build and test runners: what they run comes from
	// the project (the allow is sound only inside the Bash boundary), but
	// no option may add a program, a configuration or a directory of the
	// model's choosing. Not among cargo's: --config, --manifest-path,
	// --target-dir, -Z; npm's: --script-shell, --node-options, --prefix,
	// --userconfig and every other configuration; pytest's: --basetemp
	// (deleted and rewritten), --junitxml, --debug, --pastebin, -c, -o,
	// -p, --rootdir; tsc's: -p, --outFile, --outDir. What follows -- goes
	// to the test binary or the script, and is held to the same list.
	cargo := optionModel{short: "qvjp", valued: "jp", long: set("release", "package", "workspace", "all", "lib",
		"bins", "tests", "benches", "examples", "all-targets", "features", "all-features", "no-default-features",
		"quiet", "verbose", "jobs", "no-fail-fast", "doc", "locked", "offline", "frozen", "nocapture",
		"test-threads", "ignored", "include-ignored", "exact", "show-output", "color")}
	more["cargo build"], more["cargo test"], more["cargo check"] = cargo, cargo, cargo
	npm := optionModel{short: "s", long: set("silent", "if-present", "workspaces", "quiet")}
	more["npm test"], more["npm run"] = npm, npm
	more["pytest"] = optionModel{short: "xqvsklmrn", valued: "kmrn", long: set("exitfirst", "quiet", "verbose", "lf",
		"last-failed", "ff", "failed-first", "maxfail", "tb", "no-header", "collect-only", "co", "durations",
		"strict-markers", "showlocals", "capture", "disable-warnings", "sw", "stepwise", "color", "version")}
	more["python3 -m pytest"] = more["pytest"]
	more["tsc"] = optionModel{long: set("noEmit", "pretty", "strict", "skipLibCheck", "listFiles", "diagnostics",
		"extendedDiagnostics", "version", "help", "noUnusedLocals", "noUnusedParameters")}
	// Not among date's: -s and --set (set the clock).
	more["date"] = optionModel{short: "uRIdfr", valued: "dfr", long: set("utc", "universal", "rfc-email", "iso-8601",
		"rfc-3339", "date", "file", "reference", "debug")}
	for name, m := range more {
		models[name] = m
	}
}

// modelOf is the option model of a program's words, and how many words
// name it (git log: 2), or false.
func modelOf(argv []bash.Word) (optionModel, int, bool) {
	if len(argv) == 0 || !argv[0].Known {
		return optionModel{}, 0, false
	}
	name := argv[0].Value
	if m, ok := models[name]; ok {
		return m, 1, true
	}
	if len(argv) > 1 && argv[1].Known {
		if m, ok := models[name+" "+argv[1].Value]; ok {
			return m, 2, true
		}
		if len(argv) > 2 && argv[2].Known {
			if m, ok := models[name+" "+argv[1].Value+" "+argv[2].Value]; ok {
				return m, 3, true
			}
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
func (m optionModel) unsafeOption(argv []bash.Word, from int) string {
	operands := 0
	for i := from; i < len(argv); i++ {
		w := argv[i]
		if !w.Known {
			return w.Raw
		}
		s := w.Value
		switch {
		case m.noAssign && strings.Contains(s, "="):
			return s
		case m.noRefspec && (strings.Contains(s, ":") || strings.HasPrefix(s, "+")):
			return s
		case len(s) < 2 || s[0] != '-':
			// An argument, or an option's value: counted as an argument,
			// which only makes a model with operands stricter.
			if operands++; m.operands > 0 && operands > m.operands {
				return s
			}
			continue
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
		case m.counts && bash.AllDigits(s[1:]):
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
