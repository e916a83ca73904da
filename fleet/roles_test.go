package fleet

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// insertAsk inserts an ask as a host would (the agent role, in its own name).
func insertAsk(t *testing.T, dsn, id string, expires time.Duration) {
	t.Helper()
	c := connect(t, dsn)
	if _, err := c.Exec(ctx, `INSERT INTO toolgate.approvals (id, session_id, tool_use_id, tool_name, input, policy_version, created_at, expires_at)
		VALUES ($1, 'ses_1', 'toolu_'||$1, 'Bash', '{"command":"git push"}', 1, now(), now() + $2::interval)`, id, expires.String()); err != nil {
		t.Fatalf("insert an ask as the host: %v", err)
	}
}

// The model on a host can read the host's credentials: with them it must
// not be able to decide anything, by any path. Postgres refuses it, not
// toolgate's code.
func TestAgentRoleCannotDecide(t *testing.T) {
	f := newFixture(t)
	hostA, hostB := f.role("host_a", "host"), f.role("host_b", "host")
	insertAsk(t, hostA, "apr_1", time.Hour)
	insertAsk(t, hostB, "apr_b", time.Hour)
	a := connect(t, hostA)
	attacks := []struct{ name, sql string }{
		{"call the arbiter", `SELECT toolgate.decide('apr_1', true, 'self')`},
		{"update the row", `UPDATE toolgate.approvals SET status = 'approved' WHERE id = 'apr_1'`},
		{"write a decision", `INSERT INTO toolgate.decisions (approval_id, host, decision, actor) VALUES ('apr_1', 'host_a', 'allow', 'alice@127.0.0.1')`},
		{"delete its ask", `DELETE FROM toolgate.approvals WHERE id = 'apr_1'`},
		{"ask in another host's name", `INSERT INTO toolgate.approvals (id, host, session_id, tool_use_id, tool_name, input, policy_version, created_at, expires_at)
			VALUES ('apr_x', 'host_b', 's', 't', 'Bash', '{}', 1, now(), now() + interval '1 hour')`},
		{"insert an already decided ask", `INSERT INTO toolgate.approvals (id, session_id, tool_use_id, tool_name, input, policy_version, status, created_at, expires_at)
			VALUES ('apr_y', 's', 't', 'Bash', '{}', 1, 'approved', now(), now() + interval '1 hour')`},
		{"write events in another host's name", `INSERT INTO toolgate.events (host, seq, time, kind, subject, hash, doc) VALUES ('host_b', 1, now(), 'k', 's', 'h', '{}')`},
		{"become an approver", `SET ROLE toolgate_approver`},
	}
	for _, at := range attacks {
		if _, err := a.Exec(ctx, at.sql); err == nil {
			t.Errorf("the agent role could %s", at.name)
		} else if c := pgCode(err); c != "42501" {
			t.Errorf("%s: refused with %s (%v), want 42501 insufficient_privilege", at.name, c, err)
		}
	}
	// What it may do to its own ask is deny it by expiry; another host's it cannot touch.
	if _, err := a.Exec(ctx, `SELECT toolgate.settle('apr_b', 'approved')`); err != nil {
		t.Fatal(err)
	}
	var status, outcome string
	var n int
	super := connect(t, f.srv.SuperDSN(f.db))
	super.QueryRow(ctx, `SELECT status, coalesce(outcome, '') FROM toolgate.approvals WHERE id = 'apr_b'`).Scan(&status, &outcome)
	if status != "pending" || outcome != "" {
		t.Errorf("host_a settled host_b's ask: %s %s", status, outcome)
	}
	super.QueryRow(ctx, `SELECT count(*) FROM toolgate.decisions`).Scan(&n)
	if n != 0 {
		t.Errorf("%d decisions after the attacks", n)
	}
	// A host sees only its own asks.
	a.QueryRow(ctx, `SELECT count(*) FROM toolgate.approvals`).Scan(&n)
	if n != 1 {
		t.Errorf("host_a sees %d asks, want its own 1", n)
	}
	// The auditor reads everything and decides nothing.
	aud := connect(t, f.role("carol", "auditor"))
	if _, err := aud.Exec(ctx, `SELECT toolgate.decide('apr_1', true)`); pgCode(err) != "42501" {
		t.Errorf("the auditor could call the arbiter: %v", err)
	}
	aud.QueryRow(ctx, `SELECT count(*) FROM toolgate.approvals`).Scan(&n)
	if n != 2 {
		t.Errorf("the auditor sees %d asks, want 2", n)
	}
	// The approver decides through the arbiter, and only so.
	ap, err := Dial(ctx, f.role("alice", "approver"))
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Close()
	if _, err := ap.pool.Exec(ctx, `UPDATE toolgate.approvals SET status = 'approved' WHERE id = 'apr_1'`); pgCode(err) != "42501" {
		t.Errorf("the approver could update the row directly: %v", err)
	}
	d, err := ap.Decide(ctx, "apr_1", true, "looked at it")
	if err != nil {
		t.Fatal(err)
	}
	if d.Actor != "alice@127.0.0.1" || d.Decision != "allow" {
		t.Errorf("decision %+v: the actor is session_user@client address", d)
	}
}

// The arbiter's refusals: unknown, decided, expired.
func TestDecideRefusals(t *testing.T) {
	f := newFixture(t)
	hostA := f.role("host_a", "host")
	insertAsk(t, hostA, "apr_1", time.Hour)
	insertAsk(t, hostA, "apr_old", -time.Second)
	ap, err := Dial(ctx, f.role("alice", "approver"))
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Close()
	var r *RefusedError
	if _, err := ap.Decide(ctx, "apr_nope", true, ""); !errors.As(err, &r) || !r.NotFound {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := ap.Decide(ctx, "apr_old", true, ""); !errors.As(err, &r) || !r.Expired {
		t.Errorf("expired ask: %v", err)
	}
	if _, err := ap.Decide(ctx, "apr_1", false, "no"); err != nil {
		t.Fatal(err)
	}
	if _, err := ap.Decide(ctx, "apr_1", true, ""); !errors.As(err, &r) || !r.Decided {
		t.Errorf("second decision: %v", err)
	}
	if p, _ := ap.Pending(ctx); len(p) != 0 {
		t.Errorf("pending: %+v", p)
	}
	if rec, _ := ap.Recent(ctx, 10); len(rec) != 2 || rec[0].Decision == nil || rec[0].Decision.Note != "no" {
		t.Errorf("recent: %+v", rec)
	}
	// An agent's DSN cannot decide: the approver's client says so.
	agent, err := Dial(ctx, hostA)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	if _, err := agent.Decide(ctx, "apr_1", true, ""); !errors.As(err, &r) || !r.Permission {
		t.Errorf("agent decide: %v", err)
	}
}

// Two approvers on two hosts race on the same ask: exactly one decides.
func TestTwoApproversRace(t *testing.T) {
	f := newFixture(t)
	hostA := f.role("host_a", "host")
	approvers := []*Approver{}
	for _, name := range []string{"alice", "bob"} {
		ap, err := Dial(ctx, f.role(name, "approver"))
		if err != nil {
			t.Fatal(err)
		}
		defer ap.Close()
		approvers = append(approvers, ap)
	}
	const asks = 20
	for i := range asks {
		id := "apr_" + string(rune('a'+i))
		insertAsk(t, hostA, id, time.Hour)
		var wg sync.WaitGroup
		wins := make(chan string, 8)
		for j, ap := range approvers {
			for k := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := ap.Decide(ctx, id, (j+k)%2 == 0, ""); err == nil {
						wins <- id
					} else if r := (*RefusedError)(nil); !errors.As(err, &r) || !r.Decided {
						t.Errorf("a losing decision failed otherwise: %v", err)
					}
				}()
			}
		}
		wg.Wait()
		close(wins)
		if n := len(wins); n != 1 {
			t.Fatalf("%s: %d decisions won, want exactly 1", id, n)
		}
	}
	var n int
	connect(t, f.srv.SuperDSN(f.db)).QueryRow(ctx, `SELECT count(*) FROM toolgate.decisions`).Scan(&n)
	if n != asks {
		t.Errorf("%d decision rows for %d asks", n, asks)
	}
}
