package client

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/paths"
	"golang.org/x/sys/unix"
)

// StartConfig says how to start a daemon on demand.
type StartConfig struct {
	Paths    paths.Paths
	Self     string        // the toolgate executable
	IdleExit time.Duration // passed to toolgate serve
	Timeout  time.Duration // how long to wait for it to be ready; 10 s when 0
}

// Ensure returns a client of the daemon that serves the ledger (on its
// gate.sock), and the paths it serves, starting one (toolgate serve,
// detached, in its own session, logging to Paths.LogFile) when none
// answers. The daemon is found where its record beside the ledger says,
// whatever runtime directory cfg.Paths names (see paths.Paths.Live); a new
// one is started in cfg.Paths.RuntimeDir. A lock file beside the ledger
// serializes concurrent starters, so two runs never start two daemons,
// whatever their environments.
func Ensure(ctx context.Context, cfg StartConfig) (*Client, paths.Paths, error) {
	closeInherited()
	p := cfg.Paths.Live()
	client := NewClient(p.Socket())
	if daemonAnswers(ctx, client) {
		return client, p, nil
	}
	if err := cfg.Paths.MakeStateDir(); err != nil {
		return nil, p, err
	}
	lock, err := paths.Lock(cfg.Paths.StartLock(), true)
	if err != nil {
		return nil, p, fmt.Errorf("start lock: %w", err)
	}
	defer lock.Close()
	p = cfg.Paths.Live()
	client = NewClient(p.Socket())
	if daemonAnswers(ctx, client) { // another process started it while we waited
		return client, p, nil
	}
	if err := p.MakeRuntimeDir(); err != nil {
		return nil, p, err
	}
	cfg.Paths = p
	if err := startDaemon(ctx, cfg); err != nil {
		return nil, p, err
	}
	if _, err := client.Status(ctx); err != nil {
		return nil, p, err
	}
	return client, p, nil
}

func daemonAnswers(ctx context.Context, c *Client) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := c.Status(ctx)
	return err == nil
}

// Alive reports whether a daemon holds the daemon lock, without talking
// to it: a dead daemon's lock is released by the kernel.
func Alive(p paths.Paths) bool {
	f, err := paths.Lock(p.DaemonLock(), false)
	if err != nil {
		return true
	}
	f.Close()
	return false
}

// startDaemon runs "toolgate serve" detached and waits until it says it is
// ready on a pipe, or fails, or the timeout passes.
func startDaemon(ctx context.Context, cfg StartConfig) error {
	if err := cfg.Paths.MakeStateDir(); err != nil {
		return err
	}
	logf, err := os.OpenFile(cfg.Paths.LogFile(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("daemon log: %w", err)
	}
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	args := []string{"serve", "--ready-fd", "3"}
	if cfg.IdleExit > 0 {
		args = append(args, "--idle-exit", cfg.IdleExit.String())
	}
	if cfg.Paths.Ledger != "" {
		args = append(args, "--ledger", cfg.Paths.Ledger)
	}
	cmd := exec.Command(cfg.Self, args...)
	// The daemon must serve exactly these paths, whatever its environment
	// would make of them.
	cmd.Env = append(os.Environ(), "TOOLGATE_RUNTIME_DIR="+cfg.Paths.RuntimeDir, "TOOLGATE_STATE_DIR="+cfg.Paths.StateDir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("start the daemon: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaps it if it fails; a ready daemon outlives us
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		ready <- strings.TrimSpace(line) == "ready"
	}()
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	select {
	case ok := <-ready:
		if ok {
			return nil
		}
		err := <-exited
		return fmt.Errorf("the daemon exited before it was ready (%v): %s", err, lastLine(cfg.Paths.LogFile()))
	case <-time.After(timeout):
		cmd.Process.Kill()
		return fmt.Errorf("the daemon was not ready after %s; see %s", timeout, cfg.Paths.LogFile())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lastLine returns the last line of a log file, to say why a daemon died.
func lastLine(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "no log"
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return lines[len(lines)-1]
}

// closeInherited marks every file descriptor above stderr close-on-exec.
// What this process inherited (a cron job's lock file, say) must not leak
// into the daemon it starts, which outlives it and would hold the lock.
func closeInherited() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}
