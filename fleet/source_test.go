package fleet

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/watch"
)

// toolgate watch --fleet: the terminal approver follows every host's asks
// in Postgres and decides through the arbiter; the decision reaches the
// host.
func TestWatchFollowsTheFleet(t *testing.T) {
	f := newFixture(t)
	watchPub := listen(t, f.srv.SuperDSN(f.db), "toolgate_published")
	h := newHost(t, f.role("host_a", "host"), "")
	ap, err := Dial(ctx, f.role("alice", "approver"))
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- watch.LineMode(wctx, Source{Approver: ap}, inR, outW); outW.Close() }()
	defer func() { cancel(); inW.Close(); <-done }()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	expect := func(subs ...string) string {
		t.Helper()
		timeout := time.After(time.Minute)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("watch ended before a line with %q", subs)
				}
				all := true
				for _, s := range subs {
					all = all && strings.Contains(l, s)
				}
				if all {
					return l
				}
			case <-timeout:
				t.Fatalf("watch never printed a line with %q", subs)
			}
		}
	}
	expect("nothing is waiting")
	a := h.ask(t, "toolu_1", "git push origin main", time.Hour)
	published(t, watchPub, "host_a", h.l)
	expect(a.ID, "git push origin main")
	io.WriteString(inW, "a "+a.ID+"\n")
	expect("approved", a.ID, "by alice@127.0.0.1")
	waitApplied(t, h, a.ID)
	if c, _ := h.l.Call(ctx, "toolu_1"); c.Effect != api.EffectAllow {
		t.Errorf("the host's call: %+v", c.Verdict)
	}
	// A second decision is refused as a daemon refuses it.
	io.WriteString(inW, "d "+a.ID+"\n")
	expect("deny", a.ID, "already approved")
}
