package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/ledger"
)

// Ledger is what a host's fleet link reads of its ledger: the audit chain
// (the outbox) and the approval records it checks decisions against.
type Ledger interface {
	EventsAfter(ctx context.Context, seq uint64, limit int) ([]ledger.Event, error)
	Appended() <-chan struct{}
	Approval(ctx context.Context, id string) (api.Approval, error)
}

// Decided is a decision the arbiter made on one of this host's asks.
type Decided struct {
	ApprovalID string
	Allow      bool
	Actor      string // session_user@client address, as Postgres recorded it
	Note       string
}

// Apply records an arbitrated decision through the daemon's own path (the
// one a local approval takes). It returns nil when the approval was
// already settled on this host.
type Apply func(context.Context, Decided) error

// Node is one host's link to the fleet: it publishes the host's audit
// chain (every event, and from it the asks and what the host made of
// them) and applies the decisions Postgres arbitrated. Nothing on the
// hook's path waits for it.
type Node struct {
	pool   *pgxpool.Pool
	ledger Ledger
	apply  Apply
	log    *slog.Logger

	mu      sync.Mutex
	refused map[string]bool // decisions refused once, logged once
}

// NewNode prepares a host's link to the fleet database named by dsn (a
// libpq connection string or URL: sslmode, sslrootcert, sslcert, sslkey
// as libpq users expect). It connects lazily: a daemon starts, and gates,
// with Postgres down.
func NewNode(dsn string, l Ledger, apply Apply, log *slog.Logger) (*Node, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("fleet DSN: %w", err)
	}
	cfg.MaxConns = 3
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("fleet DSN: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Node{pool: pool, ledger: l, apply: apply, log: log, refused: map[string]bool{}}, nil
}

// Run publishes and listens until ctx ends, reconnecting with backoff
// whenever Postgres goes away.
func (n *Node) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); n.publishLoop(ctx) }()
	go func() { defer wg.Done(); n.listenLoop(ctx) }()
	wg.Wait()
}

// Close closes the node's connections, once Run has returned.
func (n *Node) Close() { n.pool.Close() }

// backoff waits between retries: 100 ms doubling to 10 s.
type backoff struct{ d time.Duration }

func (b *backoff) wait(ctx context.Context) bool {
	b.d = min(max(2*b.d, 100*time.Millisecond), 10*time.Second)
	t := time.NewTimer(b.d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (b *backoff) reset() { b.d = 0 }

// listenLoop applies the fleet's decisions on this host's asks: every one
// not applied yet on (re)connect, then each as Postgres announces it.
func (n *Node) listenLoop(ctx context.Context) {
	var b backoff
	for {
		err := n.listen(ctx, &b)
		if ctx.Err() != nil {
			return
		}
		n.log.Warn("fleet: listening for decisions failed; retrying", "err", err)
		if !b.wait(ctx) {
			return
		}
	}
}

func (n *Node) listen(ctx context.Context, b *backoff) error {
	conn, err := pgx.ConnectConfig(ctx, n.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN toolgate_decision"); err != nil {
		return err
	}
	var host string
	if err := conn.QueryRow(ctx, "SELECT session_user").Scan(&host); err != nil {
		return err
	}
	b.reset()
	for {
		if err := n.applyDecided(ctx, conn); err != nil {
			return err
		}
		for {
			nt, err := conn.WaitForNotification(ctx)
			if err != nil {
				return err
			}
			if strings.HasPrefix(nt.Payload, host+" ") {
				break
			}
		}
	}
}

// decidedRow is one of this host's asks that a person decided, as
// Postgres holds it.
type decidedRow struct {
	id, session, toolUseID, tool string
	input                        []byte
	decision, actor, note        string
}

const decidedColumns = `a.id, a.session_id, a.tool_use_id, a.tool_name, a.input::text, d.decision, d.actor, coalesce(d.note, '')`

func scanDecided(row pgx.Row) (decidedRow, error) {
	var r decidedRow
	var input string
	err := row.Scan(&r.id, &r.session, &r.toolUseID, &r.tool, &input, &r.decision, &r.actor, &r.note)
	r.input = []byte(input)
	return r, err
}

// applyDecided applies every decision on this host's asks that the host
// has not reported applied.
func (n *Node) applyDecided(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `SELECT `+decidedColumns+`
		  FROM toolgate.approvals a JOIN toolgate.decisions d ON d.approval_id = a.id
		 WHERE a.host = session_user AND a.outcome IS NULL AND a.status IN ('approved', 'denied')
		 ORDER BY d.decided_at`)
	if err != nil {
		return err
	}
	decided, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (decidedRow, error) { return scanDecided(r) })
	if err != nil {
		return err
	}
	for _, r := range decided {
		n.applyRow(ctx, r)
	}
	return nil
}

// applyRow applies one decision, after checking that the ask Postgres
// holds is the ask this host recorded: anyone holding this host's
// credentials (the model, on this host) can insert asks in its name, and
// a person approving such a forgery must not approve the real call.
func (n *Node) applyRow(ctx context.Context, r decidedRow) {
	local, err := n.ledger.Approval(ctx, r.id)
	if err == nil {
		err = sameAsk(local, r)
	}
	if err != nil {
		n.mu.Lock()
		first := !n.refused[r.id]
		n.refused[r.id] = true
		n.mu.Unlock()
		if first {
			n.log.Error("fleet: refused a decision: its ask is not this host's", "approval", r.id, "actor", r.actor, "err", err)
		}
		return
	}
	d := Decided{ApprovalID: r.id, Allow: r.decision == "allow", Actor: r.actor, Note: r.note}
	if err := n.apply(ctx, d); err != nil {
		n.log.Error("fleet: apply a decision", "approval", r.id, "err", err)
	}
}

// sameAsk says how the ask Postgres holds differs from the host's record.
func sameAsk(local api.Approval, r decidedRow) error {
	switch {
	case local.SessionID != r.session:
		return fmt.Errorf("the ask in Postgres names session %q, this host's record %q", r.session, local.SessionID)
	case local.ToolUseID != r.toolUseID || local.ToolName != r.tool:
		return fmt.Errorf("the ask in Postgres is %s %s, this host's record %s %s", r.tool, r.toolUseID, local.ToolName, local.ToolUseID)
	case !bytes.Equal(local.Input, r.input):
		return fmt.Errorf("the ask's input in Postgres (%d bytes) is not this host's record of it (%d bytes)", len(r.input), len(local.Input))
	}
	return nil
}

// Expire asks the arbiter, at an ask's expires_at on this host's clock,
// whether a person decided it in time. A decision made in time is applied
// (and true returned); otherwise Postgres marks the ask expired and the
// caller expires it locally. An error (Postgres out of reach) leaves the
// caller to expire it locally: never a silent allow.
func (n *Node) Expire(ctx context.Context, id string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var r decidedRow
	var input string
	var status string
	var decision, actor, note *string
	err := n.pool.QueryRow(ctx, `SELECT e.status, e.decision, e.actor, e.note, a.session_id, a.tool_use_id, a.tool_name, a.input::text
		  FROM toolgate.expire($1) e, toolgate.approvals a WHERE a.id = $1`, id).
		Scan(&status, &decision, &actor, &note, &r.session, &r.toolUseID, &r.tool, &input)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil // not published yet: nobody can have decided it
	}
	if err != nil {
		return false, err
	}
	if decision == nil || (status != "approved" && status != "denied") {
		return false, nil
	}
	r.id, r.input, r.decision, r.actor = id, []byte(input), *decision, *actor
	if note != nil {
		r.note = *note
	}
	n.applyRow(ctx, r)
	return true, nil
}

// outcomeOf is what a host's decision event says became of its ask.
func outcomeOf(d api.Decision) string {
	switch {
	case d.Actor == api.ActorExpiry || d.Actor == api.ActorHookGone || d.Actor == api.ActorWithdrawn || d.Actor == api.ActorClaudeDialog ||
		d.ReasonCode == api.ReasonHandedToClaude:
		return api.StatusExpired
	case d.Decision == api.EffectAllow:
		return api.StatusApproved
	default:
		return api.StatusDenied
	}
}

func decode(raw json.RawMessage, v any) error { return json.Unmarshal(raw, v) }
