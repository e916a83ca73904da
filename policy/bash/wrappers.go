package bash

import (
	"slices"
	"strings"
)

// wrapper describes a program that runs another program given as its
// arguments (sudo rm x). The deny and ask side look through it to the
// program it runs; the allow side requires that program to be allowed too.
// The table is the documented set (README, "Commands").
type wrapper struct {
	valueOpts  string   // short options that take a value: "u" for sudo -u USER
	longValue  []string // long options that take the next word as value
	positional int      // operands before the command (timeout's DURATION)
	assigns    bool     // NAME=value words may precede the command (env, sudo)
	// unknownOpts make what runs unknown: env -S splits a string, sudo -s
	// hands the command to a shell.
	unknownOpts []string
	noCommand   []string // options after which nothing runs (command -v)
	chdirOpts   []string // options whose value is the command's directory
	rootOpts    []string // options that change the root directory (chroot-like)
	// optsAfterOperands: options may follow the operands (flock FILE -c);
	// for every other wrapper the command starts right after them.
	optsAfterOperands bool
	// shellIfEmpty: with no command it starts a shell reading standard input.
	shellIfEmpty bool
	stdinArgs    bool // the command gets more arguments from standard input (xargs)
}

var sudoLong = []string{"--chdir", "--close-from", "--group", "--host", "--other-user", "--prompt",
	"--role", "--type", "--user", "--chroot", "--command-timeout"}

var wrappers = map[string]wrapper{
	"builtin": {},
	"command": {noCommand: []string{"-v", "-V"}},
	"exec":    {valueOpts: "a"},
	"nohup":   {},
	"setsid":  {},
	"time":    {valueOpts: "fo", longValue: []string{"--format", "--output"}},
	"sudo": {valueOpts: "CDghprRtTUu", longValue: sudoLong, assigns: true,
		unknownOpts: []string{"-s", "-i", "--shell", "--login"},
		noCommand:   []string{"-l", "--list", "-v", "--validate", "-e", "--edit", "-K", "-V", "--version"},
		chdirOpts:   []string{"-D", "--chdir"}, rootOpts: []string{"-R", "--chroot"}},
	"doas": {valueOpts: "Cu", unknownOpts: []string{"-s"}},
	"env": {valueOpts: "CSu", longValue: []string{"--chdir", "--unset", "--split-string"}, assigns: true,
		unknownOpts: []string{"-S", "--split-string"}, chdirOpts: []string{"-C", "--chdir"}},
	"nice":    {valueOpts: "n", longValue: []string{"--adjustment"}},
	"ionice":  {valueOpts: "cnpPu", longValue: []string{"--class", "--classdata", "--pid", "--pgid", "--uid"}},
	"timeout": {valueOpts: "ks", longValue: []string{"--kill-after", "--signal"}, positional: 1},
	"stdbuf":  {valueOpts: "eio", longValue: []string{"--input", "--output", "--error"}},
	"xargs": {valueOpts: "adEILnPs", longValue: []string{"--arg-file", "--delimiter", "--max-args",
		"--max-procs", "--max-chars", "--process-slot-var"}, stdinArgs: true},
	"chrt":    {valueOpts: "TPD", longValue: []string{"--sched-runtime", "--sched-period", "--sched-deadline"}, positional: 1},
	"taskset": {positional: 1, noCommand: []string{"-p", "--pid"}},
	"flock": {valueOpts: "wE", longValue: []string{"--timeout", "--conflict-exit-code"}, positional: 1,
		unknownOpts: []string{"-c", "--command"}, optsAfterOperands: true},
	"setpriv": {longValue: []string{"--reuid", "--regid", "--ruid", "--euid", "--rgid", "--egid", "--groups",
		"--inh-caps", "--ambient-caps", "--bounding-set", "--securebits", "--pdeathsig", "--selinux-label",
		"--apparmor-profile", "--landlock-access", "--landlock-rule", "--seccomp-filter"},
		noCommand: []string{"-d", "--dump"}},
	"unshare": {valueOpts: "SGRw", longValue: []string{"--setuid", "--setgid", "--root", "--wd", "--propagation",
		"--setgroups", "--map-user", "--map-group", "--map-users", "--map-groups"},
		shellIfEmpty: true, chdirOpts: []string{"-w", "--wd"}, rootOpts: []string{"-R", "--root"}},
	"chroot": {longValue: []string{"--userspec", "--groups"}, positional: 1, shellIfEmpty: true},
	"nsenter": {valueOpts: "tSG", longValue: []string{"--target", "--setuid", "--setgid"}, shellIfEmpty: true,
		rootOpts: []string{"-r", "--root"}},
	"systemd-run": {valueOpts: "upEHM", longValue: []string{"--unit", "--property", "--description", "--slice",
		"--setenv", "--uid", "--gid", "--nice", "--working-directory", "--host", "--machine", "--on-active",
		"--on-boot", "--on-startup", "--on-unit-active", "--on-unit-inactive", "--on-calendar",
		"--timer-property", "--path-property", "--socket-property", "--service-type"},
		unknownOpts: []string{"-S", "--shell"}, shellIfEmpty: true, chdirOpts: []string{"--working-directory"}},
	"strace": {valueOpts: "abeEIoOpPsSuUX", longValue: []string{"--trace", "--signal", "--status", "--output",
		"--detach-on", "--user", "--env", "--attach", "--trace-path", "--string-limit", "--summary-sort-by",
		"--columns", "--const-print-style", "--inject", "--fault"}},
	"ltrace":  {valueOpts: "aADeFlnopsuwx", longValue: []string{"--output", "--library"}},
	"busybox": {},
	"toybox":  {},
	"pkexec":  {longValue: []string{"--user"}},
}

// runuser runs a command as a user with -u USER, like a wrapper; without
// it, it behaves like su and hands its arguments to a shell.
var runuserWrapper = wrapper{valueOpts: "ugGw", longValue: []string{"--user", "--group", "--supp-group",
	"--whitelist-environment"}, unknownOpts: []string{"-c", "--command", "--session-command", "-s", "--shell"}}

// stripped is what a wrapper runs, under one reading of its arguments.
type stripped struct {
	argv    []Word
	unknown string // what runs is unknown, and why
	chdir   []Word // directories the command runs in (env -C DIR)
	root    bool   // the command runs under another root directory
}

// strip returns what a wrapper runs. Where the matcher cannot tell (an
// option it does not know may take a value; a word only known at run time
// may hold options or be the command) it returns every reading.
func (w wrapper) strip(name string, args []Word) []stripped {
	var out []stripped
	w.readings(name, args, stripped{}, 0, &out)
	return out
}

func (w wrapper) readings(name string, args []Word, r stripped, seen int, out *[]stripped) {
	for len(args) > 0 && len(*out) < maxCandidates {
		a := args[0]
		switch {
		case seen > 0 && seen == w.positional && !w.optsAfterOperands:
			*out = append(*out, w.command(args, r, seen)) // options end with the operands
			return
		case !a.Known:
			// Either the command itself, or options: both readings.
			*out = append(*out, w.command(args, r, seen))
			args = args[1:]
		case a.Value == "--":
			*out = append(*out, w.command(args[1:], r, seen))
			return
		case len(a.Value) > 1 && a.Value[0] == '-' || name == "env" && a.Value == "-":
			var alt []Word
			var stop bool
			if args, alt, stop = w.option(name, args, &r, out); stop {
				return
			}
			if alt != nil {
				w.readings(name, alt, r, seen, out) // the option took a value
			}
		case w.assigns && strings.Contains(a.Value, "=") && isName(optName(a.Value)):
			for len(args) > 0 && args[0].Known && strings.Contains(args[0].Value, "=") && isName(optName(args[0].Value)) {
				args = args[1:]
			}
			*out = append(*out, w.command(args, r, w.positional)) // options end with the assignments
			return
		case seen < w.positional:
			args, seen = args[1:], seen+1
		default:
			*out = append(*out, w.command(args, r, seen))
			return
		}
	}
	if len(args) == 0 && w.shellIfEmpty && len(*out) == 0 {
		r.unknown = name + " with no command starts a shell reading standard input"
		*out = append(*out, r)
	}
}

// option consumes one option word (and its value). stop: nothing more to
// read (the command is unknown, or there is none); alt: the rest under the
// reading where an option the table does not know took a value.
func (w wrapper) option(name string, args []Word, r *stripped, out *[]stripped) (rest, alt []Word, stop bool) {
	a := args[0]
	switch {
	case slices.Contains(w.unknownOpts, optName(a.Value)) || w.unknownShort(a.Value):
		r.unknown = name + " " + a.Value + " hands the command to a shell or splits it: the matcher cannot see it"
		*out = append(*out, *r)
		return nil, nil, true
	case slices.Contains(w.noCommand, optName(a.Value)):
		return nil, nil, true
	case strings.HasPrefix(a.Value, "--"):
		rest, alt = w.longOpt(args, r)
		return rest, alt, false
	case a.Value == "-":
		return args[1:], nil, false // env -: env -i
	}
	return w.shortOpt(args, r), nil, false
}

// command is the reading where args[0] starts the command.
func (w wrapper) command(args []Word, r stripped, seen int) stripped {
	if seen < w.positional {
		if len(args) <= w.positional-seen {
			return r
		}
		args = args[w.positional-seen:]
	}
	r.argv = args
	return r
}

// longOpt consumes --name[=value]. An option the table does not know may
// take the next word as its value: next is that second reading.
func (w wrapper) longOpt(args []Word, r *stripped) (rest, next []Word) {
	a := args[0]
	name, value, eq := strings.Cut(a.Value, "=")
	args = args[1:]
	takes := slices.Contains(w.longValue, name)
	if !eq && takes && len(args) > 0 {
		w.note(name, args[0], r)
		return args[1:], nil
	}
	if eq {
		w.note(name, Literal(value), r)
	}
	if !eq && !takes && len(args) > 1 {
		return args, args[1:]
	}
	return args, nil
}

// shortOpt consumes a cluster such as -u root or -n10.
func (w wrapper) shortOpt(args []Word, r *stripped) []Word {
	a := args[0]
	args = args[1:]
	for i := 1; i < len(a.Value); i++ {
		if strings.IndexByte(w.valueOpts, a.Value[i]) < 0 {
			continue
		}
		opt := "-" + a.Value[i:i+1]
		if i+1 < len(a.Value) {
			w.note(opt, Literal(a.Value[i+1:]), r)
			return args
		}
		if len(args) > 0 {
			w.note(opt, args[0], r)
			return args[1:]
		}
		return args
	}
	return args
}

// note records what an option with a value means for paths.
func (w wrapper) note(opt string, value Word, r *stripped) {
	if slices.Contains(w.chdirOpts, opt) {
		r.chdir = append(r.chdir, value)
	}
	if slices.Contains(w.rootOpts, opt) {
		r.root = true
	}
}

// unknownShort reports whether a short option cluster holds an option that
// makes the command unknown (env -iS).
func (w wrapper) unknownShort(s string) bool {
	if !strings.HasPrefix(s, "-") || strings.HasPrefix(s, "--") {
		return false
	}
	for _, u := range w.unknownOpts {
		if len(u) == 2 && u[0] == '-' && u[1] != '-' && strings.IndexByte(s[1:], u[1]) >= 0 {
			// The letter counts only before a letter that takes a value.
			if i := strings.IndexByte(s[1:], u[1]); !strings.ContainsAny(s[1:1+i], w.valueOpts) {
				return true
			}
		}
	}
	return false
}

// optName is an option without its =value.
func optName(s string) string {
	name, _, _ := strings.Cut(s, "=")
	return name
}
