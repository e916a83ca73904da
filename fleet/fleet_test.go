package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
)

var ctx = context.Background()

// fixture is a real PostgreSQL with the fleet schema in a fresh database.
type fixture struct {
	t   *testing.T
	srv *pgtest.Server
	db  string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	srv := pgtest.Start(t)
	f := &fixture{t: t, srv: srv, db: srv.NewDatabase(ctx)}
	res, err := Init(ctx, srv.SuperDSN(f.db))
	if err != nil {
		t.Fatalf("fleet init: %v", err)
	}
	if res.SchemaVersion != 1 || len(res.Applied) != 1 {
		t.Fatalf("fleet init: %+v", res)
	}
	return f
}

// role creates a login role of a kind and returns its DSN.
func (f *fixture) role(name, kind string) string {
	f.t.Helper()
	pw := pgtest.Password()
	if err := AddRole(ctx, f.srv.SuperDSN(f.db), name, kind, pw); err != nil {
		f.t.Fatal(err)
	}
	return f.srv.DSN(f.db, name, pw)
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// host is one host: a real ledger and its link to the fleet.
type host struct {
	l       *ledger.Ledger
	node    *Node
	applied chan Decided
	stop    func()
	logs    *strings.Builder
	mu      *sync.Mutex
	once    sync.Once
}

func newHost(t *testing.T, dsn string, dir string) *host {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	l, err := ledger.Open(filepath.Join(dir, "ledger"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := &host{l: l, applied: make(chan Decided, 16), logs: &strings.Builder{}, mu: &sync.Mutex{}}
	apply := func(ctx context.Context, d Decided) error {
		dec := api.Decision{ApprovalID: d.ApprovalID, Decision: api.EffectDeny, Actor: "fleet:" + d.Actor, ReasonCode: "user_denied", Note: d.Note}
		if d.Allow {
			dec.Decision, dec.ReasonCode = api.EffectAllow, "user_approved"
		}
		_, _, err := l.Arbitrated(ctx, dec)
		var te *ledger.TerminalError
		if errors.As(err, &te) {
			err = nil
		}
		h.applied <- d
		return err
	}
	h.node, err = NewNode(dsn, l, apply, slog.New(slog.NewTextHandler(lockedWriter{h.mu, h.logs}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.node.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the host's log:\n%s", h.log())
		}
	})
	h.start(t)
	return h
}

// start runs the host's link to the fleet until the test ends or stop.
func (h *host) start(t *testing.T) {
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); h.node.Run(runCtx) }()
	h.stop = func() { cancel(); <-done }
	t.Cleanup(func() {
		h.stop()
		h.closeLedger()
	})
}

func (h *host) closeLedger() { h.once.Do(func() { h.l.Close() }) }

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (h *host) log() string { h.mu.Lock(); defer h.mu.Unlock(); return h.logs.String() }

// ask proposes a call and asks a person about it, on the host's ledger.
func (h *host) ask(t *testing.T, id, command string, timeout time.Duration) api.Approval {
	t.Helper()
	input, _ := json.Marshal(map[string]string{"command": command})
	if _, _, err := h.l.Propose(ctx, api.Call{ToolUseID: id, SessionID: "ses_1", ToolName: "Bash", Input: input}); err != nil {
		t.Fatal(err)
	}
	a, _, err := h.l.CreateApproval(ctx, id, ledger.ApprovalRequest{MatchedRule: "ask-push", PolicyVersion: 1, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// published waits until Postgres holds the host's chain up to its head,
// as the publisher announces it (LISTEN toolgate_published).
func published(t *testing.T, listener *pgx.Conn, hostName string, l *ledger.Ledger) {
	t.Helper()
	head := headSeq(l)
	var have int64
	if err := listener.QueryRow(ctx, "SELECT coalesce(max(seq), 0) FROM toolgate.events WHERE host = $1", hostName).Scan(&have); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for uint64(have) < head {
		n, err := listener.WaitForNotification(wctx)
		if err != nil {
			t.Fatalf("Postgres never held event %d of %s (it holds %d): %v", head, hostName, have, err)
		}
		name, seq, _ := strings.Cut(n.Payload, " ")
		if name == hostName {
			var s int64
			json.Unmarshal([]byte(seq), &s)
			have = max(have, s)
		}
	}
}

func listen(t *testing.T, dsn, channel string) *pgx.Conn {
	t.Helper()
	c := connect(t, dsn)
	if _, err := c.Exec(ctx, "LISTEN "+channel); err != nil {
		t.Fatal(err)
	}
	return c
}

func waitApplied(t *testing.T, h *host, id string) Decided {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case d := <-h.applied:
			if d.ApprovalID == id {
				return d
			}
		case <-timeout:
			t.Fatalf("the decision on %s never reached the host; its log:\n%s", id, h.log())
		}
	}
}

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }
