// The boundary every Bash command of a gated session runs in. It is C, run
// as a constructor before the program it is part of starts, for two
// reasons: a process can enter a new user namespace only while it has one
// thread (the Go runtime starts several before main), and it is on the
// path of every Bash command.
//
// It is built two ways from this one file:
//
//   - toolgate-bash.so (-DTOOLGATE_PRELOAD), for toolgate run: Claude Code
//     runs CLAUDE_CODE_SHELL, a link to bash, with LD_PRELOAD naming this
//     object, so the dynamic loader runs the constructor inside that bash
//     before its main. In the process Claude Code started as its shell
//     (executed as CLAUDE_CODE_SHELL, or named so in argv[0]) it applies
//     the boundary, takes itself out of LD_PRELOAD for what the command
//     runs, and returns: bash runs the command, with no second exec. In
//     every other process it does nothing. When it cannot apply the
//     boundary it says why and exits 126.
//   - toolgate-bash, a static program: "toolgate-bash -c COMMAND" applies
//     the boundary and executes bash with the same arguments, for
//     installed sessions, whose settings file names it (from PATH, when
//     the file is shared); "toolgate-bash --enter" makes a session's
//     namespace for claude. When a step fails it records why and returns:
//     the Go main then reports it and exits 126, and the command never
//     runs outside the boundary.
//
// The boundary is in TOOLGATE_BOUNDARY, which toolgate writes, one entry a
// line:
//
//	w PATH   writes allowed beneath PATH (Landlock); nothing else is writable
//	p PATH   a project root: its .git (pinned), .git/config, .git/hooks,
//	         .git/config.worktree, .git/modules, .git/commondir,
//	         .git/worktrees, .claude and .mcp.json become read-only
//	r PATH   PATH becomes read-only, when it exists
//	h PATH   PATH, a directory, is hidden under an empty read-only tmpfs
//	s PATH   PATH, a directory, is replaced by an empty one of the
//	         session's own (a tmpfs): what is written there stays in the
//	         session, and what others keep there is out of its reach
//	l PATH   writes allowed beneath PATH too, for Claude Code's own
//	         "-c -l" start (it writes the shell snapshot every later
//	         command sources): the model's commands cannot write it
//	n        no network: every socket(2) is refused
//	x PATH   the shell toolgate-bash executes (default /bin/bash)
//
// p, r, h and s need a user and mount namespace; w a Landlock ABI of 3 or
// more. Unix sockets are refused always (seccomp), so a command cannot talk
// to the gate, an approver, the desktop bus or a tmux server.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

// From linux/landlock.h, spelled out so that an older header builds this.
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_REMOVE_DIR (1ULL << 4)
#define LL_FS_REMOVE_FILE (1ULL << 5)
#define LL_FS_MAKE_CHAR (1ULL << 6)
#define LL_FS_MAKE_DIR (1ULL << 7)
#define LL_FS_MAKE_REG (1ULL << 8)
#define LL_FS_MAKE_SOCK (1ULL << 9)
#define LL_FS_MAKE_FIFO (1ULL << 10)
#define LL_FS_MAKE_BLOCK (1ULL << 11)
#define LL_FS_MAKE_SYM (1ULL << 12)
#define LL_FS_REFER (1ULL << 13)
#define LL_FS_TRUNCATE (1ULL << 14)
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL (1ULL << 1)

struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

#ifndef CAP_LAST_CAP
#define CAP_LAST_CAP 40
#endif

#ifndef SECBIT_NOROOT
#define SECBIT_NOROOT (1 << 0)
#define SECBIT_NOROOT_LOCKED (1 << 1)
#endif

// The minimum Landlock ABI: 3 makes truncation a write.
#define MIN_LANDLOCK_ABI 3

#define BOUNDARY_ENV "TOOLGATE_BOUNDARY"

// toolgate_bash_error is why the boundary could not be applied ("" when it
// was, and exec failed: then errno says why). The Go main reads it.
char toolgate_bash_error[1024];

// environment is the environment this process started with. The
// constructor reads and changes it directly: in bash, getenv, setenv and
// unsetenv are bash's own, which act on shell variables that do not exist
// yet when this runs.
static char **environment;

// env_slot is the entry of the environment that sets name, or NULL.
static char **env_slot(const char *name)
{
	size_t n = strlen(name);
	for (char **e = environment; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return e;
	return NULL;
}

static char *env_get(const char *name)
{
	char **e = env_slot(name);
	return e ? *e + strlen(name) + 1 : NULL;
}

static int fail(const char *what, const char *path)
{
	int e = errno;
	if (path)
		snprintf(toolgate_bash_error, sizeof toolgate_bash_error, "%.200s %.700s: %s", what, path, e ? strerror(e) : "refused");
	else
		snprintf(toolgate_bash_error, sizeof toolgate_bash_error, "%s: %s", what, e ? strerror(e) : "refused");
	return -1;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int enter_namespaces(void)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return fail("enter a user and mount namespace", NULL);
	if (write_file("/proc/self/setgroups", "deny") < 0)
		return fail("write", "/proc/self/setgroups");
	snprintf(map, sizeof map, "%u %u 1", uid, uid);
	if (write_file("/proc/self/uid_map", map) < 0)
		return fail("write", "/proc/self/uid_map");
	snprintf(map, sizeof map, "%u %u 1", gid, gid);
	if (write_file("/proc/self/gid_map", map) < 0)
		return fail("write", "/proc/self/gid_map");
	return 0;
}

// locked_flags are the flags of the mount under path that a remount in a
// user namespace must keep.
static unsigned long locked_flags(const char *path)
{
	struct statvfs st;
	unsigned long flags = 0;
	if (statvfs(path, &st) < 0)
		return 0;
	if (st.f_flag & ST_NOSUID)
		flags |= MS_NOSUID;
	if (st.f_flag & ST_NODEV)
		flags |= MS_NODEV;
	if (st.f_flag & ST_NOEXEC)
		flags |= MS_NOEXEC;
	if (st.f_flag & ST_NOATIME)
		flags |= MS_NOATIME;
	if (st.f_flag & ST_NODIRATIME)
		flags |= MS_NODIRATIME;
	if (st.f_flag & ST_RELATIME)
		flags |= MS_RELATIME;
	return flags;
}

// bind mounts what fd refers to over itself, read-only unless rw. Going
// through the descriptor, the mount lands on what was checked, whatever
// a concurrent process did to the name since.
static int bind_over(int fd, const char *path, int rw)
{
	char self[64];
	snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
	if (mount(self, self, NULL, MS_BIND | MS_REC, NULL) < 0)
		return fail("bind", path);
	if (rw)
		return 0;
	// The new mount sits on the name now: remount it by the name.
	if (mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | locked_flags(path), NULL) < 0)
		return fail("make read-only", path);
	return 0;
}

// pin binds name under the directory dirfd over itself (read-only unless
// rw). A name that does not exist is left alone; a link is refused: its
// target could be pinned, the link itself could not.
static int pin(int dirfd, const char *dir, const char *name, int rw, int want_dir)
{
	char path[4096];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : fail("open", path);
	if (fstat(fd, &st) < 0) {
		close(fd);
		return fail("stat", path);
	}
	if (S_ISLNK(st.st_mode)) {
		close(fd);
		errno = 0;
		return fail("toolgate protects this path and it is a link; replace it with what it points to, or remove it:", path);
	}
	if (want_dir && !S_ISDIR(st.st_mode)) {
		close(fd);
		return 0;
	}
	int r = bind_over(fd, path, rw);
	close(fd);
	return r;
}

// protect_project makes what in a project root starts code outside the
// boundary later read-only: git's config and hooks (git runs them for the
// person), Claude Code's project settings, skills and agents, and its MCP
// servers. .git itself is pinned, so it cannot be moved aside and remade.
static int protect_project(const char *root)
{
	static const char *in_git[] = {"config", "config.worktree", "hooks", "modules", "commondir", "worktrees"};
	int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return errno == ENOENT ? 0 : fail("open", root);
	char git[4096];
	snprintf(git, sizeof git, "%s/.git", root);
	struct stat st;
	int r = 0;
	if (fstatat(rootfd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
		r = pin(rootfd, root, ".git", 1, 1);
		int gitfd = r < 0 ? -1 : open(git, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (r == 0 && gitfd < 0)
			r = fail("open", git);
		for (size_t i = 0; r == 0 && i < sizeof in_git / sizeof in_git[0]; i++)
			r = pin(gitfd, git, in_git[i], 0, 0);
		if (gitfd >= 0)
			close(gitfd);
	} else {
		// A .git file (a worktree) names the real git directory: toolgate
		// passes that one's config and hooks as r entries.
		r = pin(rootfd, root, ".git", 0, 0);
	}
	if (r == 0)
		r = pin(rootfd, root, ".claude", 0, 0);
	if (r == 0)
		r = pin(rootfd, root, ".mcp.json", 0, 0);
	close(rootfd);
	return r;
}

static int read_only(const char *path)
{
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : fail("open", path);
	int r = bind_over(fd, path, 0);
	close(fd);
	return r;
}

static int hide(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "size=4k,nr_inodes=1,mode=0500") < 0)
		return fail("hide", path);
	return 0;
}

static int own(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return fail("find the directory", path);
	if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=16m,mode=0700") < 0)
		return fail("mount a directory of the session's own on", path);
	return 0;
}

static int landlock(char **writable, int n)
{
	int abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
	if (abi < MIN_LANDLOCK_ABI) {
		if (abi >= 0)
			errno = 0;
		snprintf(toolgate_bash_error, sizeof toolgate_bash_error,
			 "this kernel offers Landlock ABI %d; the boundary needs %d (Linux 6.2)%s%s",
			 abi < 0 ? 0 : abi, MIN_LANDLOCK_ABI, errno ? ": " : "", errno ? strerror(errno) : "");
		return -1;
	}
	struct ll_ruleset_attr attr = {
		.handled_access_fs = LL_FS_WRITE_FILE | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | LL_FS_MAKE_CHAR |
				     LL_FS_MAKE_DIR | LL_FS_MAKE_REG | LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO |
				     LL_FS_MAKE_BLOCK | LL_FS_MAKE_SYM | LL_FS_REFER | LL_FS_TRUNCATE,
	};
	size_t size = offsetof(struct ll_ruleset_attr, scoped);
	if (abi >= 6) {
		attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
		size = sizeof attr;
	}
	int ruleset = syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (ruleset < 0)
		return fail("create a Landlock ruleset", NULL);
	for (int i = 0; i < n; i++) {
		struct stat st;
		int fd = open(writable[i], O_PATH | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT)
				continue; // a cache that does not exist yet
			return fail("open", writable[i]);
		}
		if (fstat(fd, &st) < 0)
			return fail("stat", writable[i]);
		struct ll_path_beneath_attr rule = {
			.allowed_access = S_ISDIR(st.st_mode) ? attr.handled_access_fs : (LL_FS_WRITE_FILE | LL_FS_TRUNCATE),
			.parent_fd = fd,
		};
		if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0) < 0)
			return fail("allow writes beneath", writable[i]);
		close(fd);
	}
	if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
		return fail("enter the Landlock domain", NULL);
	close(ruleset);
	return 0;
}

// no_capabilities makes sure nothing this process executes holds a
// capability. A user namespace gives its creator all of them, and root (a
// session run as root, or uid 0 mapped into the namespace) gets them back
// at exec unless its bounding set is empty or its securebits say no.
static int no_capabilities(void)
{
	int bounded = 1;
	if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED, 0, 0, 0) < 0 && errno != EPERM)
		return fail("keep root from regaining capabilities", NULL);
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EPERM && errno != EINVAL)
			return fail("drop a capability", NULL);
		if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1)
			bounded = 0;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return fail("clear the ambient capabilities", NULL);
	struct __user_cap_header_struct head = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct none[2] = {{0}};
	if (syscall(SYS_capset, &head, none) < 0)
		return fail("drop the capabilities", NULL);
	int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	if (geteuid() == 0 && !bounded && (bits < 0 || !(bits & SECBIT_NOROOT))) {
		errno = 0;
		return fail("root would regain its capabilities at exec", NULL);
	}
	return 0;
}

// seccomp refuses Unix sockets (and with no_network every socket),
// io_uring, which could open one behind the filter's back, and prlimit64
// on any process but the caller.
static int seccomp(int no_network)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
#if defined(__x86_64__)
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
#elif defined(__aarch64__)
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_AARCH64, 1, 0),
#else
#error "toolgate-bash knows the system calls of amd64 and arm64 only"
#endif
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM), // another ABI (i386, x32 below)
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
#else
		BPF_JUMP(BPF_JMP | BPF_JA, 0, 0, 0),
		BPF_JUMP(BPF_JMP | BPF_JA, 0, 0, 0),
#endif
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		// prlimit64 on another process (pid 0 is the caller): the gate's
		// processes run as the same user, and a limit lowered there
		// (open files, file size) would fail the gate in the session.
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prlimit64, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, no_network ? SECCOMP_RET_ERRNO | EPERM : SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog prog = {.len = sizeof filter / sizeof filter[0], .filter = filter};
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return fail("install the system call filter", NULL);
	return 0;
}

#define MAX_ENTRIES 1024

struct boundary {
	char *writable[MAX_ENTRIES], *projects[MAX_ENTRIES], *readonly[MAX_ENTRIES], *hidden[MAX_ENTRIES], *own[MAX_ENTRIES];
	int nw, np, nr, nh, ns, no_network;
	const char *shell;
};

// project is where a command of a session toolgate did not start runs
// (an installed one): the nearest directory from the working directory up
// that holds .git, else the working directory. Claude Code keeps a
// command's working directory inside the project it started in.
static char *project(void)
{
	static char dir[4096];
	char probe[4200];
	if (!getcwd(dir, sizeof dir))
		return NULL;
	size_t n = strlen(dir);
	for (;;) {
		snprintf(probe, sizeof probe, "%.*s/.git", (int)n, dir);
		if (access(probe, F_OK) == 0) {
			dir[n ? n : 1] = 0;
			return dir;
		}
		while (n > 0 && dir[n - 1] != '/')
			n--;
		if (n <= 1)
			break;
		n--; // the slash
	}
	return getcwd(dir, sizeof dir);
}

// placeholder resolves @project and @tmp (the temp dir: TMPDIR, or /tmp),
// which a settings file names because it cannot know them.
static char *placeholder(char *arg)
{
	if (!arg || arg[0] != '@')
		return arg;
	if (strcmp(arg, "@project") == 0)
		return project();
	if (strcmp(arg, "@snapshots") == 0) {
		static char dir[4096];
		char *config = env_get("CLAUDE_CONFIG_DIR"), *home = env_get("HOME");
		if (config && config[0] == '/')
			snprintf(dir, sizeof dir, "%s/shell-snapshots", config);
		else if (home && home[0] == '/')
			snprintf(dir, sizeof dir, "%s/.claude/shell-snapshots", home);
		else
			return NULL;
		return dir;
	}
	if (strcmp(arg, "@tmp") == 0) {
		char *tmp = env_get("TMPDIR");
		return tmp && tmp[0] == '/' ? tmp : "/tmp";
	}
	return NULL;
}

static int parse(char *config, struct boundary *b, int login)
{
	b->shell = "/bin/bash";
	for (char *save = NULL, *line = strtok_r(config, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char op = line[0];
		char *arg = placeholder(line[1] == ' ' ? line + 2 : NULL);
		int ok = (op == 'n' && line[1] == 0) || (arg && arg[0] == '/');
		if (ok && op == 'w' && b->nw < MAX_ENTRIES)
			b->writable[b->nw++] = arg;
		else if (ok && op == 'l' && b->nw < MAX_ENTRIES) {
			if (login)
				b->writable[b->nw++] = arg;
		}
		else if (ok && op == 'p' && b->np < MAX_ENTRIES)
			b->projects[b->np++] = arg;
		else if (ok && op == 'r' && b->nr < MAX_ENTRIES)
			b->readonly[b->nr++] = arg;
		else if (ok && op == 'h' && b->nh < MAX_ENTRIES)
			b->hidden[b->nh++] = arg;
		else if (ok && op == 's' && b->ns < MAX_ENTRIES)
			b->own[b->ns++] = arg;
		else if (ok && op == 'n')
			b->no_network = 1;
		else if (ok && op == 'x')
			b->shell = arg;
		else {
			snprintf(toolgate_bash_error, sizeof toolgate_bash_error, "%s: cannot read the entry %.200s",
				 BOUNDARY_ENV, line);
			return -1;
		}
	}
	return 0;
}

// namespaced applies the entries that need a user and mount namespace.
static int namespaced(const struct boundary *b)
{
	if (b->np + b->nr + b->nh + b->ns == 0)
		return 0;
	if (enter_namespaces() < 0)
		return -1;
	for (int i = 0; i < b->np; i++)
		if (protect_project(b->projects[i]) < 0)
			return -1;
	for (int i = 0; i < b->nr; i++)
		if (read_only(b->readonly[i]) < 0)
			return -1;
	for (int i = 0; i < b->nh; i++)
		if (hide(b->hidden[i]) < 0)
			return -1;
	for (int i = 0; i < b->ns; i++)
		if (own(b->own[i]) < 0)
			return -1;
	return 0;
}

// bound applies the whole boundary in TOOLGATE_BOUNDARY to this process,
// which is about to run the shell with argv, and returns 0; or records why
// it could not and returns -1.
static int bound(char **argv, struct boundary *b)
{
	char *config = env_get(BOUNDARY_ENV);
	if (!config || !*config) {
		snprintf(toolgate_bash_error, sizeof toolgate_bash_error,
			 "%s is not set: toolgate-bash runs commands only inside the boundary toolgate describes there",
			 BOUNDARY_ENV);
		return -1;
	}
	// Claude Code makes its shell snapshot with "-c -l"; a command the
	// model runs is already inside a boundary, which this cannot widen.
	int login = argv[0] && argv[1] && argv[2] && strcmp(argv[1], "-c") == 0 && strcmp(argv[2], "-l") == 0;
	if (parse(strdup(config), b, login) < 0 || namespaced(b) < 0 || no_capabilities() < 0)
		return -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return fail("set no_new_privs", NULL);
	if (landlock(b->writable, b->nw) < 0 || seccomp(b->no_network) < 0)
		return -1;
	return 0;
}

#ifdef TOOLGATE_PRELOAD

// forget_preload takes this object out of LD_PRELOAD, in the environment
// bash is about to read: what the command runs is inside the boundary
// already, and needs no second one.
static void forget_preload(void)
{
	Dl_info self;
	char **slot = env_slot("LD_PRELOAD");
	if (!slot || !dladdr((void *)forget_preload, &self) || !self.dli_fname)
		return;
	const char *list = *slot + strlen("LD_PRELOAD=");
	size_t len = strlen(self.dli_fname);
	char *kept = malloc(strlen(*slot) + 1), *w = kept;
	if (!kept)
		return;
	w += sprintf(w, "LD_PRELOAD=");
	char *first = w;
	for (const char *p = list; *p;) {
		size_t word = strcspn(p, " :");
		if (word && !(word == len && strncmp(p, self.dli_fname, len) == 0)) {
			if (w != first)
				*w++ = ':';
			memcpy(w, p, word);
			w += word;
		}
		p += word;
		p += strspn(p, " :");
	}
	*w = 0;
	if (*first) {
		*slot = kept;
		return;
	}
	free(kept);
	do // the last one: the entry goes
		slot[0] = slot[1];
	while (*slot++);
}

__attribute__((constructor)) static void toolgate_bash(int argc, char **argv, char **envp)
{
	environment = envp;
	char *shell = env_get("CLAUDE_CODE_SHELL");
	const char *executed = (const char *)getauxval(AT_EXECFN);
	struct boundary b = {0};
	if (!shell || !((argc > 0 && strcmp(argv[0], shell) == 0) || (executed && strcmp(executed, shell) == 0)))
		return; // not the shell Claude Code started
	forget_preload();
	if (bound(argv, &b) == 0)
		return;
	fprintf(stderr, "toolgate-bash: the command did not run: %s (reason: boundary_failed)\n", toolgate_bash_error);
	_exit(126);
}

#else

// enter is "toolgate-bash --enter BOUNDARY [--ready FD] PROGRAM ARGS":
// the session's namespace, made once for claude and everything it starts
// (its own file tools included), then PROGRAM. It takes no w or n entries:
// those are each command's. FD is toolgate run's ready descriptor, handed
// on by toolgate-hook contain: it closes with PROGRAM's exec, or is told
// why there was none.
static void enter(char **argv, char **envp)
{
	struct boundary b = {0};
	int ready = -1;
	char **program = argv + 3;
	if (argv[2] && argv[3] && strcmp(argv[3], "--ready") == 0 && argv[4]) {
		ready = atoi(argv[4]);
		program = argv + 5;
	}
	if (!argv[2] || !program[0] || program[0][0] != '/') {
		snprintf(toolgate_bash_error, sizeof toolgate_bash_error,
			 "usage: toolgate-bash --enter BOUNDARY [--ready FD] /PATH/OF/PROGRAM [ARGS] (toolgate run starts claude this way)");
		return;
	}
	int ok = parse(strdup(argv[2]), &b, 0) == 0;
	if (ok && (b.nw || b.no_network)) {
		snprintf(toolgate_bash_error, sizeof toolgate_bash_error, "--enter takes p, r, h and s entries only");
		ok = 0;
	}
	if (ok && namespaced(&b) == 0 && no_capabilities() == 0) {
		if (ready >= 0)
			fcntl(ready, F_SETFD, FD_CLOEXEC);
		execve(program[0], program, envp);
		fail("execute", program[0]);
		if (ready >= 0 && write(ready, ", but the exec failed", 21) < 0)
			return;
		return;
	}
	if (ready >= 0) {
		char said[1100];
		int n = snprintf(said, sizeof said, ", but toolgate-bash could not enter the boundary: %s", toolgate_bash_error);
		if (write(ready, said, n < (int)sizeof said ? n : (int)sizeof said - 1) < 0)
			return;
	}
}

// shell is "toolgate-bash -c COMMAND" and every other use: the whole
// boundary in TOOLGATE_BOUNDARY, then bash.
static void shell(char **argv, char **envp)
{
	struct boundary b = {0};
	if (bound(argv, &b) < 0)
		return;
	argv[0] = (char *)b.shell;
	execve(b.shell, argv, envp);
	fail("execute", b.shell);
}

__attribute__((constructor)) static void toolgate_bash(int argc, char **argv, char **envp)
{
	environment = envp;
	if (argc > 1 && strcmp(argv[1], "--enter") == 0)
		enter(argv, envp);
	else
		shell(argv, envp);
}

#endif
