package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/internal/proc"
	"github.com/toolgate/toolgate/paths"
)

// trustedGate is the daemon toolgate run talks to: the one it started or
// found when the session began, or one it started itself since. It is
// verified from the kernel, never from what the socket answers: the
// process listening on gate.sock must run toolgate's own executable, as
// the same user, and carry no more restrictions than run itself (a
// process the contained model started carries no_new_privs). Once the
// gate is lost (replaced, or gone and not to be restarted), every call is
// denied gate_unavailable and the session is stopped.
type trustedGate struct {
	start  client.StartConfig
	onLost func(error) // called once, when the gate is lost

	mu    sync.Mutex
	pid   int         // the trusted daemon's pid
	where paths.Paths // the paths it serves: its sockets, its spool
	lost  error       // why the gate is lost, once it is
}

// connect makes sure a daemon runs and trusts it if it passes.
func (g *trustedGate) connect(ctx context.Context) (*client.Client, error) {
	g.mu.Lock()
	start := g.start
	start.Paths = g.paths()
	g.mu.Unlock()
	c, where, err := client.Ensure(ctx, start)
	if err != nil {
		return nil, err
	}
	p, err := c.Peer(ctx)
	if err != nil {
		return nil, err
	}
	if err := g.check(p); err != nil {
		return nil, &untrustedError{err}
	}
	g.mu.Lock()
	g.pid, g.where = p.PID, where
	g.mu.Unlock()
	c.VerifyPeer = g.verify
	return c, nil
}

// paths are those of the trusted daemon once there is one, else the
// configured ones; a daemon started again is started where the last one
// was, so that claude's hooks find it. g.mu is held.
func (g *trustedGate) paths() paths.Paths {
	if g.where.RuntimeDir != "" {
		return g.where
	}
	return g.start.Paths
}

// Paths are the paths of the trusted daemon.
func (g *trustedGate) Paths() paths.Paths {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.paths()
}

// check refuses a process that cannot be the daemon run started or found.
func (g *trustedGate) check(p client.Peer) error {
	if err := (client.Trust{Exe: g.start.Self}).Verify(p); err != nil {
		return err
	}
	self, _ := proc.NoNewPrivs(os.Getpid())
	if theirs, err := proc.NoNewPrivs(p.PID); !self && (theirs || err != nil) {
		return fmt.Errorf("the process on the gate's socket (pid %d) runs with no_new_privs, as the processes of a contained session do: it cannot be the daemon", p.PID)
	}
	return nil
}

// verify is the client's check before every request: only the trusted
// daemon, and nothing once the gate is lost.
func (g *trustedGate) verify(p client.Peer) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.lost != nil:
		return g.lost
	case p.PID != g.pid:
		return fmt.Errorf("pid %d answers on the gate's socket, not the daemon toolgate run trusts (pid %d)", p.PID, g.pid)
	}
	return nil
}

// Lost is the reason the gate was lost, or nil.
func (g *trustedGate) Lost() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lost
}

// lose records that the gate is lost, once.
func (g *trustedGate) lose(err error) {
	g.mu.Lock()
	first := g.lost == nil
	if first {
		g.lost = err
	}
	g.mu.Unlock()
	if first && g.onLost != nil {
		g.onLost(err)
	}
}

// restart starts the daemon again when the trusted one is gone, and
// trusts the new one; the gate is lost when it cannot, or when the trusted
// daemon lives but no longer answers on its socket (something replaced
// the socket file).
func (g *trustedGate) restart(ctx context.Context) bool {
	if g.Lost() != nil {
		return false
	}
	g.mu.Lock()
	pid, sock := g.pid, g.paths().Socket()
	g.mu.Unlock()
	// A daemon that is stopping (SIGTERM) drops its connections before it
	// exits: give it the time its shutdown may take to answer again or be
	// gone. Another process answering is never the daemon.
	for deadline := time.Now().Add(stopGrace); proc.Alive(pid); time.Sleep(50 * time.Millisecond) {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		p, err := client.NewClient(sock).Peer(pctx)
		cancel()
		switch {
		case err == nil && p.PID == pid:
			return true // it answers again
		case err == nil:
			g.lose(fmt.Errorf("the gate was replaced: pid %d answers on %s, not the daemon toolgate run trusts (pid %d)", p.PID, sock, pid))
			return false
		case time.Now().After(deadline) || ctx.Err() != nil:
			g.lose(fmt.Errorf("the daemon (pid %d) lives but does not answer on %s: something replaced its socket", pid, sock))
			return false
		}
	}
	// A daemon that stopped because it could no longer serve (its ledger's
	// directory removed, read-only or full) is not started again: another
	// one would serve a ledger this session was never recorded in, or fail
	// the same way.
	g.mu.Lock()
	where := g.paths()
	g.mu.Unlock()
	if note, ok := paths.StopNoteOf(where, pid); ok {
		g.lose(fmt.Errorf("the daemon (pid %d) stopped: %s", pid, note.Reason))
		return false
	}
	// A daemon killed a moment ago may still hold the ledger while the
	// kernel tears it down: a start that fails is tried again, for a while;
	// a process that is not the daemon loses the gate at once.
	var err error
	for deadline := time.Now().Add(stopGrace); ; time.Sleep(100 * time.Millisecond) {
		if _, err = g.connect(ctx); err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false // this caller gave up (its call is denied); the gate is not lost for it
		}
		if errors.As(err, new(*untrustedError)) || time.Now().After(deadline) {
			break
		}
	}
	g.lose(fmt.Errorf("the daemon is gone and could not be restarted: %w", err))
	return false
}

// untrustedError is a process on the gate's socket that cannot be the
// daemon run trusts.
type untrustedError struct{ err error }

func (e *untrustedError) Error() string { return e.err.Error() }
func (e *untrustedError) Unwrap() error { return e.err }

// stopGrace is how long a daemon that lives but does not answer may take
// to stop: its shutdown lets requests in flight finish for up to 10 s.
const stopGrace = 12 * time.Second

// recordClient is a client of the trusted daemon alone, for reading the
// session's record after the gate was lost: it waits (a few seconds at
// most) while that daemon lives but does not answer on its socket, as
// when it has yet to take the socket back from an impostor, and it talks
// to no other process.
func (g *trustedGate) recordClient(ctx context.Context) *client.Client {
	g.mu.Lock()
	pid, sock := g.pid, g.paths().Socket()
	g.mu.Unlock()
	c := client.NewClient(sock)
	c.VerifyPeer = func(p client.Peer) error {
		if p.PID != pid {
			return fmt.Errorf("pid %d answers on %s, not the daemon toolgate run trusts (pid %d)", p.PID, sock, pid)
		}
		return nil
	}
	for deadline := time.Now().Add(stopGrace); proc.Alive(pid) && time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(50 * time.Millisecond) {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		p, err := client.NewClient(sock).Peer(pctx)
		cancel()
		if err == nil && p.PID == pid {
			break
		}
	}
	return c
}

// watchInterval is how often run looks at its daemon while claude runs.
const watchInterval = 500 * time.Millisecond

// watch looks after the trusted daemon while claude runs: a daemon that
// died is restarted (and the new one trusted); a socket on which another
// process answers loses the gate.
func (g *trustedGate) watch(ctx context.Context) {
	tick := time.NewTicker(watchInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		g.mu.Lock()
		pid, sock := g.pid, g.paths().Socket()
		g.mu.Unlock()
		if !proc.Alive(pid) {
			g.restart(ctx)
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		p, err := client.NewClient(sock).Peer(pctx)
		cancel()
		// Nobody answering is what a stopping daemon looks like (calls fail
		// closed meanwhile); another process answering is an impostor.
		if err == nil && p.PID != pid {
			g.lose(fmt.Errorf("the gate was replaced: pid %d answers on %s, not the daemon toolgate run trusts (pid %d)", p.PID, sock, pid))
		}
	}
}
