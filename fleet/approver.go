package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/toolgate/toolgate/api"
)

// Ask is one host's ask as the fleet holds it, with its decision once
// there is one.
type Ask struct {
	Host    string `json:"host"`
	Outcome string `json:"outcome,omitempty"` // what the host applied, once it reported it
	api.ApprovalDetail
}

// Approver is a person's connection to the fleet: the pending asks of
// every host, and decisions through the arbiter. What it may do is what
// its role may do in Postgres.
type Approver struct {
	pool *pgxpool.Pool
}

// Dial connects to the fleet database as the role dsn names.
func Dial(ctx context.Context, dsn string) (*Approver, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("fleet DSN: %w", err)
	}
	cfg.MaxConns = 4
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("fleet DSN: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, &UnavailableError{Err: err}
	}
	return &Approver{pool: pool}, nil
}

// Close closes the connections.
func (a *Approver) Close() { a.pool.Close() }

const askColumns = `a.host, a.id, a.session_id, a.tool_use_id, a.tool_name, a.input::text, a.matched_rule, a.policy_version,
	a.status, a.created_at, a.expires_at, coalesce(a.outcome, ''),
	d.decision, d.actor, d.note, d.decided_at`

func scanAsk(row pgx.CollectableRow) (Ask, error) {
	var k Ask
	var input string
	var decision, actor, note *string
	var decidedAt *time.Time
	ap := &k.Approval
	err := row.Scan(&k.Host, &ap.ID, &ap.SessionID, &ap.ToolUseID, &ap.ToolName, &input, &ap.MatchedRule, &ap.PolicyVersion,
		&ap.Status, &ap.CreatedAt, &ap.ExpiresAt, &k.Outcome, &decision, &actor, &note, &decidedAt)
	ap.Input = json.RawMessage(input)
	ap.CreatedAt, ap.ExpiresAt = ap.CreatedAt.UTC(), ap.ExpiresAt.UTC()
	if decision != nil {
		d := &api.Decision{ApprovalID: ap.ID, ToolUseID: ap.ToolUseID, Decision: api.Effect(*decision), Actor: *actor, DecidedAt: decidedAt.UTC()}
		if note != nil {
			d.Note = *note
		}
		k.Decision = d
	}
	return k, err
}

func (a *Approver) asks(ctx context.Context, where string, args ...any) ([]Ask, error) {
	rows, err := a.pool.Query(ctx, `SELECT `+askColumns+` FROM toolgate.approvals a
		LEFT JOIN toolgate.decisions d ON d.approval_id = a.id `+where, args...)
	if err != nil {
		return nil, &UnavailableError{Err: err}
	}
	out, err := pgx.CollectRows(rows, scanAsk)
	if err != nil {
		return nil, &UnavailableError{Err: err}
	}
	return out, nil
}

// Pending lists the asks a person can still decide, the soonest to
// expire first.
func (a *Approver) Pending(ctx context.Context) ([]Ask, error) {
	return a.asks(ctx, `WHERE a.status = 'pending' AND a.expires_at > now() ORDER BY a.expires_at, a.id`)
}

// Recent lists the latest decided or expired asks, newest first.
func (a *Approver) Recent(ctx context.Context, limit int) ([]Ask, error) {
	return a.asks(ctx, `WHERE a.status <> 'pending' OR a.expires_at <= now()
		ORDER BY coalesce(d.decided_at, a.settled_at, a.expires_at) DESC LIMIT $1`, limit)
}

// Ask returns one ask.
func (a *Approver) Ask(ctx context.Context, id string) (Ask, error) {
	out, err := a.asks(ctx, `WHERE a.id = $1`, id)
	if err != nil {
		return Ask{}, err
	}
	if len(out) == 0 {
		return Ask{}, &RefusedError{NotFound: true, Message: "no approval " + id}
	}
	return out[0], nil
}

// Decide approves or denies an ask through the arbiter (toolgate.decide):
// exactly one decision per ask wins; a refused one is a *RefusedError.
func (a *Approver) Decide(ctx context.Context, id string, allow bool, note string) (api.Decision, error) {
	var d api.Decision
	var notePtr *string
	if note != "" {
		notePtr = &note
	}
	var decision string
	err := a.pool.QueryRow(ctx, `SELECT d.approval_id, d.decision, d.actor, d.decided_at FROM toolgate.decide($1, $2, $3) d`,
		id, allow, notePtr).Scan(&d.ApprovalID, &decision, &d.Actor, &d.DecidedAt)
	if err != nil {
		return d, refusal(err)
	}
	d.Decision, d.Note = api.Effect(decision), note
	return d, nil
}

// Changes is signalled whenever an ask is added, decided or settled,
// until ctx ends; it closes when the connection is lost.
func (a *Approver) Changes(ctx context.Context) (<-chan struct{}, error) {
	conn, err := a.pool.Acquire(ctx)
	if err != nil {
		return nil, &UnavailableError{Err: err}
	}
	pc := conn.Hijack()
	if _, err := pc.Exec(ctx, "LISTEN toolgate_queue"); err != nil {
		pc.Close(context.Background())
		return nil, &UnavailableError{Err: err}
	}
	ch := make(chan struct{}, 1)
	go func() {
		defer close(ch)
		defer pc.Close(context.Background())
		for {
			if _, err := pc.WaitForNotification(ctx); err != nil {
				return
			}
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	return ch, nil
}
