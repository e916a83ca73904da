package watch

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/render"
)

// LineMode is toolgate watch for anything that is not a terminal: one line
// per ask, decision and expiry, at most 80 columns where it can, and
// commands typed one per line ("a ID", "d ID [WHY]", "q"). It returns at
// q or at the end of the input.
func LineMode(ctx context.Context, c client.Approver, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	l := &lines{client: c, out: out}
	go client.Follow(ctx, c, l.show)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if quit := l.command(ctx, strings.Fields(sc.Text())); quit {
			return nil
		}
	}
	return nil
}

type lines struct {
	client  client.Approver
	out     io.Writer
	mu      sync.Mutex
	pending []api.ApprovalDetail
	started bool // the first snapshot was shown
}

func (l *lines) show(c client.Change) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !c.Connected {
		fmt.Fprintln(l.out, "toolgate watch: the daemon is not reachable; trying again…")
		return
	}
	l.pending = c.Pending
	what := "ask"
	if !l.started {
		l.started, what = true, "waiting"
		if len(c.Pending) == 0 {
			fmt.Fprintln(l.out, "toolgate watch: nothing is waiting; new asks show here (a ID approves, d ID denies, s ID shows one whole, q quits)")
		}
	}
	for _, d := range c.Added {
		l.line(what, d)
	}
	for _, d := range c.Removed {
		l.line(d.Approval.Status, d)
	}
}

// line prints one approval on one line.
func (l *lines) line(what string, d api.ApprovalDetail) {
	a := d.Approval
	detail := ruleOf(d)
	switch {
	case a.Status == "pending":
		detail += ", " + left(d, time.Now()) + " left"
	case d.Decision != nil:
		detail += " by " + d.Decision.Actor
	}
	if a.Status == "pending" && render.Clipped(a.ToolName, a.Input, 40) {
		detail += "; s " + a.ID + " shows it whole"
	}
	fmt.Fprintf(l.out, "%s %-8s %s  %s: %s  (%s)\n", time.Now().Format("15:04:05"), what, a.ID,
		a.ToolName, render.Summary(a.ToolName, a.Input, 40), detail)
}

// command runs one typed command; it reports whether to quit.
func (l *lines) command(ctx context.Context, f []string) bool {
	if len(f) == 0 {
		return false
	}
	switch f[0] {
	case "q", "quit":
		return true
	case "s", "show":
		id, err := l.target(f)
		if err != nil {
			l.printf("toolgate watch: %v\n", err)
			return false
		}
		l.showWhole(id)
	case "a", "approve", "d", "deny":
		id, err := l.target(f)
		if err != nil {
			l.printf("toolgate watch: %v\n", err)
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
		if _, err := l.client.Decide(ctx, id, api.DecideRequest{Decision: decision, Reason: reason}); err != nil {
			l.printf("toolgate watch: %s %s: %s\n", decision, id, decisionError(err))
		}
	default:
		l.printf("toolgate watch: a ID approves, d ID [WHY] denies, s ID shows an ask whole, q quits\n")
	}
	return false
}

// showWhole prints every line of a pending ask's input: in line mode too,
// nothing approved is hidden.
func (l *lines) showWhole(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range l.pending {
		if d.Approval.ID == id {
			fmt.Fprintf(l.out, "%s  %s, %s:\n", id, d.Approval.ToolName, ruleOf(d))
			for _, line := range render.All(d.Approval.ToolName, d.Approval.Input, 78) {
				fmt.Fprintf(l.out, "  %s\n", line)
			}
			return
		}
	}
	fmt.Fprintf(l.out, "toolgate watch: %s is not waiting\n", id)
}

// target is the approval a command names, or the only pending one.
func (l *lines) target(f []string) (string, error) {
	if len(f) > 1 {
		return f[1], nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	list := l.pending
	if len(list) != 1 {
		return "", fmt.Errorf("%d asks are waiting: name one (%s ID)", len(list), f[0])
	}
	return list[0].Approval.ID, nil
}

func (l *lines) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.out, format, args...)
}
