package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/render"
	"github.com/toolgate/toolgate/supervisor/api"
	"github.com/urfave/cli/v2"
)

func watchCommand() *cli.Command {
	return &cli.Command{
		Name:  "watch",
		Usage: "follow the asks as they come, and approve or deny them",
		Description: `Shows every pending ask (session, tool, the input in short, the rule and its
reason_code, the time left), then each new ask, decision and expiry as it
happens, one line each; it reconnects by itself when the daemon restarts.
Type a command and Enter:

   a ID          approve (a alone: the only pending ask)
   d ID [WHY]    deny, with an optional note for the audit
   q             quit

This is the line mode, for any terminal and for pipes.

EXAMPLES
   toolgate watch
   echo "a apr_01J..." | toolgate watch

EXIT STATUS
   0    quit (q, or the end of the input)
   69   the daemon cannot be started`,
		Action: func(cliCtx *cli.Context) error {
			if err := ensureDaemon(cliCtx.Context); err != nil {
				return err
			}
			w := &watcher{client: api.NewClient(gatePaths("").ApproveSocket()), out: cliCtx.App.Writer, pending: map[string]api.ApprovalDetail{}}
			return w.run(cliCtx.Context, cliCtx.App.Reader)
		},
	}
}

// watcher is toolgate watch in line mode.
type watcher struct {
	client  *api.Client
	out     io.Writer
	mu      sync.Mutex
	pending map[string]api.ApprovalDetail
}

func (w *watcher) run(ctx context.Context, in io.Reader) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go w.follow(ctx)
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		if quit := w.command(ctx, strings.Fields(lines.Text())); quit {
			return nil
		}
	}
	return nil
}

// follow prints events, reconnecting when the stream ends.
func (w *watcher) follow(ctx context.Context) {
	for ctx.Err() == nil {
		stream, err := w.client.Watch(ctx)
		if err != nil {
			w.printf("toolgate watch: the daemon is not reachable; trying again…\n")
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		for {
			ev, err := stream.Next()
			if err != nil {
				break
			}
			w.show(ev)
		}
		stream.Close()
	}
}

func (w *watcher) show(ev api.WatchEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch ev.Type {
	case api.EventSnapshot:
		w.pending = map[string]api.ApprovalDetail{}
		for _, d := range ev.Pending {
			w.pending[d.Approval.ID] = d
			w.line("waiting", d)
		}
		if len(ev.Pending) == 0 {
			fmt.Fprintln(w.out, "toolgate watch: nothing is waiting; new asks show here (a ID approves, d ID denies, q quits)")
		}
	case api.EventRequested:
		w.pending[ev.Approval.Approval.ID] = *ev.Approval
		w.line("ask", *ev.Approval)
	case api.EventDecided, api.EventExpired:
		delete(w.pending, ev.Approval.Approval.ID)
		w.line(ev.Approval.Approval.Status, *ev.Approval)
	}
}

// line prints one approval on one line, at most 80 columns where it can.
func (w *watcher) line(what string, d api.ApprovalDetail) {
	a := d.Approval
	rule := "default"
	if a.MatchedRule != nil {
		rule = *a.MatchedRule
	}
	detail := fmt.Sprintf("rule %s", rule)
	switch {
	case a.Status == "pending":
		detail += fmt.Sprintf(", %s left", time.Until(a.ExpiresAt).Round(time.Second))
	case d.Decision != nil:
		detail += " by " + d.Decision.Actor
	}
	fmt.Fprintf(w.out, "%s %-8s %s  %s: %s  (%s)\n", time.Now().Format("15:04:05"), what, a.ID,
		a.ToolName, render.Summary(a.ToolName, a.Input, 40), detail)
}

func (w *watcher) printf(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fmt.Fprintf(w.out, format, args...)
}

// command runs one typed command; it reports whether to quit.
func (w *watcher) command(ctx context.Context, f []string) bool {
	if len(f) == 0 {
		return false
	}
	switch f[0] {
	case "q", "quit":
		return true
	case "a", "approve", "d", "deny":
		id, err := w.target(f)
		if err != nil {
			w.printf("toolgate watch: %v\n", err)
			return false
		}
		decision := "approve"
		if f[0][0] == 'd' {
			decision = "deny"
		}
		reason := ""
		if len(f) > 2 {
			reason = strings.Join(f[2:], " ")
		}
		if _, err := w.client.Decide(ctx, id, api.DecideRequest{Decision: decision, Reason: reason}); err != nil {
			var se *api.StatusError
			if errors.As(err, &se) {
				err = errors.New(se.Err.Message)
			}
			w.printf("toolgate watch: %s %s: %v\n", decision, id, err)
		}
	default:
		w.printf("toolgate watch: a ID approves, d ID [WHY] denies, q quits\n")
	}
	return false
}

// target is the approval a command names, or the only pending one.
func (w *watcher) target(f []string) (string, error) {
	if len(f) > 1 {
		return f[1], nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) != 1 {
		return "", fmt.Errorf("%d asks are waiting: name one (%s ID)", len(w.pending), f[0])
	}
	for id := range w.pending {
		return id, nil
	}
	return "", nil
}
