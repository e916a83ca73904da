package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/ledger"
)

// publishBatch is how many events one transaction publishes at most.
const publishBatch = 256

// publishLoop copies the audit chain to Postgres, in order, from the first
// event Postgres lacks: the chain is the outbox (durable before the gate
// answers), and (host, seq) makes a publish idempotent, so a crash
// between the local commit and the publish, or between the publish and
// its acknowledgement, publishes each event once.
func (n *Node) publishLoop(ctx context.Context) {
	var b backoff
	var cursor uint64
	known := false
	defer func() { n.drain(ctx, cursor, known) }()
	for ctx.Err() == nil {
		if !known {
			c, err := n.cursor(ctx)
			if err != nil {
				n.log.Warn("fleet: Postgres is out of reach; events wait in the ledger", "err", err)
				if !b.wait(ctx) {
					return
				}
				continue
			}
			cursor, known = c, true
		}
		evs, err := n.ledger.EventsAfter(ctx, cursor, publishBatch)
		if err != nil {
			n.log.Error("fleet: read the audit chain", "err", err)
			if !b.wait(ctx) {
				return
			}
			continue
		}
		if len(evs) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-n.ledger.Appended():
			}
			continue
		}
		if err := n.publish(ctx, evs); err != nil {
			if ctx.Err() != nil {
				return
			}
			n.log.Warn("fleet: publish failed; retrying", "from_seq", evs[0].Seq, "err", err)
			known = false
			if !b.wait(ctx) {
				return
			}
			continue
		}
		cursor = evs[len(evs)-1].Seq
		b.reset()
	}
}

// drainTime bounds the last publish of a daemon that stops.
const drainTime = 3 * time.Second

// drain publishes, for a moment, what the ledger holds beyond the cursor
// as the daemon stops (an idle daemon's last session, say), so that the
// fleet's audit does not wait for the host's next start.
func (n *Node) drain(ctx context.Context, cursor uint64, known bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainTime)
	defer cancel()
	if !known {
		c, err := n.cursor(ctx)
		if err != nil {
			return
		}
		cursor = c
	}
	for {
		evs, err := n.ledger.EventsAfter(ctx, cursor, publishBatch)
		if err != nil || len(evs) == 0 || n.publish(ctx, evs) != nil {
			return
		}
		cursor = evs[len(evs)-1].Seq
	}
}

// Published is the last event of this host's chain before the first one
// Postgres lacks: the ledger may prune up to it (ledger.Prune), never
// beyond, or the publisher could not copy what it lacks.
func (n *Node) Published(ctx context.Context) (uint64, error) { return n.cursor(ctx) }

// cursor is the last event of this host's chain before the first one
// Postgres lacks.
func (n *Node) cursor(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var c int64
	err := n.pool.QueryRow(ctx, `SELECT coalesce(
		(SELECT min(rn) - 1 FROM (SELECT seq, row_number() OVER (ORDER BY seq) AS rn FROM toolgate.events WHERE host = session_user) x WHERE seq <> rn),
		(SELECT coalesce(max(seq), 0) FROM toolgate.events WHERE host = session_user))`).Scan(&c)
	return uint64(c), err
}

// publish writes events in one transaction: the events themselves, the
// asks they create, and what the host made of its asks.
func (n *Node) publish(ctx context.Context, evs []ledger.Event) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	seqs := make([]int64, len(evs))
	times := make([]time.Time, len(evs))
	kinds, subjects, hashes, docs := make([]string, len(evs)), make([]string, len(evs)), make([]string, len(evs)), make([]string, len(evs))
	for i, e := range evs {
		doc, err := json.Marshal(e)
		if err != nil {
			return err
		}
		seqs[i], times[i], kinds[i], subjects[i], hashes[i], docs[i] = int64(e.Seq), e.Time, e.Kind, e.Subject, e.Hash, string(doc)
	}
	return pgx.BeginFunc(ctx, n.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `INSERT INTO toolgate.events (seq, time, kind, subject, hash, doc)
			SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::json[])
			ON CONFLICT (host, seq) DO NOTHING RETURNING seq`, seqs, times, kinds, subjects, hashes, docs)
		if err != nil {
			return err
		}
		inserted, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if len(inserted) < len(evs) {
			if err := n.checkConflicts(ctx, tx, evs, inserted); err != nil {
				return err
			}
		}
		for _, e := range evs {
			if err := n.publishAsk(ctx, tx, e); err != nil {
				return fmt.Errorf("event %d (%s): %w", e.Seq, e.Kind, err)
			}
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify('toolgate_published', session_user || ' ' || $1)`, strconv.FormatInt(seqs[len(seqs)-1], 10))
		return err
	})
}

// checkConflicts compares the events Postgres already held with the
// ledger's: the same hash is an earlier publish of the same event; another
// is an event written in this host's name by someone else, which is
// logged (the ledger's chain stays the authority, and audit checks find it).
func (n *Node) checkConflicts(ctx context.Context, tx pgx.Tx, evs []ledger.Event, inserted []int64) error {
	done := map[int64]bool{}
	for _, s := range inserted {
		done[s] = true
	}
	var seqs []int64
	for _, e := range evs {
		if !done[int64(e.Seq)] {
			seqs = append(seqs, int64(e.Seq))
		}
	}
	rows, err := tx.Query(ctx, `SELECT seq, hash FROM toolgate.events WHERE host = session_user AND seq = ANY($1)`, seqs)
	if err != nil {
		return err
	}
	held := map[int64]string{}
	var seq int64
	var hash string
	_, err = pgx.ForEachRow(rows, []any{&seq, &hash}, func() error { held[seq] = hash; return nil })
	if err != nil {
		return err
	}
	for _, e := range evs {
		if h, ok := held[int64(e.Seq)]; ok && h != e.Hash {
			n.log.Error("fleet: Postgres holds another event under this host's name and seq: written by someone with this host's credentials",
				"seq", e.Seq, "ledger_hash", e.Hash, "postgres_hash", h)
		}
	}
	return nil
}

// publishAsk publishes what an event says of an ask: a new one, or what
// the host made of it.
func (n *Node) publishAsk(ctx context.Context, tx pgx.Tx, e ledger.Event) error {
	switch e.Kind {
	case ledger.KindApprovalCreated:
		var a api.Approval
		if err := decode(e.Data, &a); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO toolgate.approvals
			(id, session_id, tool_use_id, tool_name, input, matched_rule, policy_version, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5::text::json, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`,
			a.ID, a.SessionID, a.ToolUseID, a.ToolName, string(a.Input), a.MatchedRule, a.PolicyVersion, a.CreatedAt, a.ExpiresAt)
		if err == nil && tag.RowsAffected() == 0 {
			n.log.Info("fleet: the ask was already in Postgres (published before, or written by someone with this host's credentials)", "approval", a.ID)
		}
		return err
	case ledger.KindApprovalDecided:
		var d api.Decision
		if err := decode(e.Data, &d); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT toolgate.settle($1, $2)`, e.Subject, outcomeOf(d))
		return err
	}
	return nil
}
