package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/fleet"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/modelscript"
)

// fleetDB is a real PostgreSQL with the fleet's schema, initialised by
// toolgate fleet init as its owner would.
type fleetDB struct {
	t   *testing.T
	pg  *pgtest.Server
	db  string
	env *world // a third environment: the approver's machine
}

func newFleetDB(t *testing.T) *fleetDB {
	t.Helper()
	pg := pgtest.Start(t)
	f := &fleetDB{t: t, pg: pg, db: pg.NewDatabase(context.Background()), env: newWorld(t)}
	if code, out := f.env.toolgate("fleet", "init", "--fleet", pg.SuperDSN(f.db), "--json"); code != 0 || !strings.Contains(out, `"schema_version": 1`) {
		t.Fatalf("toolgate fleet init: exit %d\n%s", code, out)
	}
	return f
}

// role creates a login role with toolgate fleet role and returns its DSN.
func (f *fleetDB) role(name, kind string) string {
	f.t.Helper()
	code, out := f.env.toolgateOut("fleet", "role", name, "--kind", kind, "--fleet", f.pg.SuperDSN(f.db), "--json")
	var r struct{ Password string }
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Password == "" {
		f.t.Fatalf("toolgate fleet role: exit %d\n%s", code, out)
	}
	return f.pg.DSN(f.db, name, r.Password)
}

// host makes w a host of the fleet: its daemon reads the DSN from its
// configuration directory.
func (f *fleetDB) host(w *world, name string) {
	f.t.Helper()
	dir := filepath.Join(w.root, "config", "toolgate")
	os.MkdirAll(dir, 0o700)
	if err := os.WriteFile(filepath.Join(dir, "fleet.dsn"), []byte(f.role(name, "host")+"\n"), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// auditMatches waits until Postgres holds host's whole audit chain as its
// ledger has it now, and checks it event by event.
func (f *fleetDB) auditMatches(w *world, host string) int {
	t := f.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	local, err := w.approver().VerifyAudit(ctx)
	if err != nil || !local.Valid {
		t.Fatalf("the host's own chain: %+v %v", local, err)
	}
	conn, err := pgx.Connect(ctx, f.pg.SuperDSN(f.db))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	conn.Exec(ctx, "LISTEN toolgate_published")
	for {
		var have int64
		conn.QueryRow(ctx, "SELECT coalesce(max(seq), 0) FROM toolgate.events WHERE host = $1", host).Scan(&have)
		if uint64(have) >= local.Events {
			break
		}
		if _, err := conn.WaitForNotification(ctx); err != nil {
			t.Fatalf("Postgres never held %s's %d events (it holds %d)", host, local.Events, have)
		}
	}
	rows, _ := conn.Query(ctx, "SELECT doc::text FROM toolgate.events WHERE host = $1 AND seq <= $2 ORDER BY seq", host, local.Events)
	docs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var check ledger.ChainCheck
	for _, doc := range docs {
		var e ledger.Event
		json.Unmarshal([]byte(doc), &e)
		if err := check.Next(e.Seq, &e); err != nil {
			t.Fatalf("%s's chain in Postgres: %v", host, err)
		}
	}
	if seq, hash := check.Last(); seq != local.Events || hash != local.Head {
		t.Errorf("%s's chain in Postgres ends at %d %s; its ledger at %d %s", host, seq, hash, local.Events, local.Head)
	}
	t.Logf("%s: Postgres holds its %d events, the chain ending %s as its ledger's", host, len(docs), local.Head[:12])
	return len(docs)
}

// ranOnce checks that an approved command ran exactly once.
func ranOnce(t *testing.T, w *world, file string) {
	t.Helper()
	data, _ := os.ReadFile(filepath.Join(w.project, file))
	if n := strings.Count(string(data), "ran\n"); n != 1 {
		t.Errorf("the approved call ran %d times", n)
	}
}

const fleetPolicy = `{"version": 1, "default": "allow", "rules": [
  {"id": "ask-echo", "effect": "ask", "tool": "Bash", "input": {"command": {"command": [["echo"]]}}, "reason_code": "needs_review"}
]}`

// Two hosts share one Postgres; a real claude asks on each; an approver on
// a third machine approves A's and denies B's with toolgate approve and
// deny --fleet. Each decision reaches its own host, A's call runs once,
// B's does not, and each host's audit in Postgres is its local chain.
func TestFleetApproveWithTheCLI(t *testing.T) {
	t.Parallel()
	f := newFleetDB(t)
	a, b := newWorld(t), newWorld(t)
	f.host(a, "host_a")
	f.host(b, "host_b")
	alice := f.role("alice", "approver")
	la, waitA := a.runAsync(runArgs{policy: fleetPolicy, script: []modelscript.Step{step(bash("toolu_fleet_a", "echo ran >> ran.txt"))}})
	lb, waitB := b.runAsync(runArgs{policy: fleetPolicy, script: []modelscript.Step{step(bash("toolu_fleet_b", "echo ran >> ran.txt"))}})
	idA, idB := la.approvalID(t), lb.approvalID(t)
	// On host A, its own socket no longer decides: Postgres does.
	if code, out := a.toolgate("approve", idA); code != 77 || !strings.Contains(out, "--fleet") {
		t.Errorf("a local approve on a fleet host: exit %d %s", code, out)
	}
	// The approver sees both hosts' asks (published through the outbox).
	f.until("the approver sees both hosts' asks", func() bool { return len(f.pending(alice)) == 2 })
	if code, out := f.env.toolgate("approve", idA, "--fleet", alice, "--reason", "fine"); code != 0 {
		t.Fatalf("approve --fleet: exit %d %s", code, out)
	}
	if code, out := f.env.toolgate("deny", idB, "--fleet", alice, "--reason", "secret-note-for-the-audit"); code != 0 {
		t.Fatalf("deny --fleet: exit %d %s", code, out)
	}
	if code, out := f.env.toolgate("show", idA, "--fleet", alice); code != 0 || !strings.Contains(out, "by alice@127.0.0.1") {
		t.Errorf("show --fleet: exit %d\n%s", code, out)
	}
	// A second approver's late decision loses, and says so.
	if code, out := f.env.toolgate("deny", idA, "--fleet", alice); code != 79 {
		t.Errorf("a second decision: exit %d %s", code, out)
	}
	ra, rb := waitA(), waitB()
	if ra.code != 0 || rb.code != 77 {
		t.Fatalf("host A exited %d (want 0), host B %d (want 77)", ra.code, rb.code)
	}
	contains(t, "host A's stderr", ra.stderr, "toolgate approve "+idA+" --fleet DSN")
	ca := ra.call(t, "toolu_fleet_a")
	if ca.Effect != "allow" || ca.Source != "person" || ca.Actor != "fleet:alice@127.0.0.1" || !ca.Executed {
		t.Errorf("host A's call: %+v", ca)
	}
	ranOnce(t, a, "ran.txt")
	if cb := rb.call(t, "toolu_fleet_b"); cb.Effect != "deny" || cb.Executed || cb.ReasonCode != "needs_review" {
		t.Errorf("host B's call: %+v", cb)
	}
	// Nothing of the fleet reaches the model: not the approver, their
	// address, their note, the database.
	seen := rb.saw(t, "toolu_fleet_b")
	for _, leak := range []string{"alice", "127.0.0.1", "secret-note", "fleet", "postgres", f.db} {
		if !seen.IsError || strings.Contains(strings.ToLower(seen.Text), leak) {
			t.Errorf("the model saw %q (leaks %q?)", seen.Text, leak)
		}
	}
	f.auditMatches(a, "host_a")
	f.auditMatches(b, "host_b")
}

// until waits until cond holds, checking it again after each publish to
// Postgres (it listens before it checks: no publish is missed).
func (f *fleetDB) until(what string, cond func() bool) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, f.pg.SuperDSN(f.db))
	if err != nil {
		f.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN toolgate_published"); err != nil {
		f.t.Fatal(err)
	}
	for !cond() {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			f.t.Fatalf("%s: never (%v)", what, err)
		}
	}
}

// pending lists the fleet's pending asks as an approver's CLI does.
func (f *fleetDB) pending(dsn string) []fleet.Ask {
	f.t.Helper()
	code, out := f.env.toolgateOut("pending", "--fleet", dsn, "--json")
	var list struct {
		Approvals []fleet.Ask `json:"approvals"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		f.t.Fatalf("pending --fleet: exit %d %s", code, out)
	}
	return list.Approvals
}

// A real claude on host A asks; a person approves on toolgate web --fleet,
// served by a process on a third machine, in a real headless Chromium; the
// call runs once, and the audit in Postgres is A's chain.
func TestFleetApproveFromTheBrowser(t *testing.T) {
	t.Parallel()
	needTools(t, "chromium")
	f := newFleetDB(t)
	a, other := newWorld(t), newWorld(t)
	f.host(a, "host_a")
	f.host(other, "host_b")
	alice := f.role("alice", "approver")
	link := f.startWeb(alice)
	la, waitA := a.runAsync(runArgs{policy: fleetPolicy, script: []modelscript.Step{step(bash("toolu_web_a", "echo ran >> ran.txt"))}})
	id := la.approvalID(t)
	b := browser(t)
	item := `li.ask[data-id="` + id + `"]`
	if err := chromedp.Do(b,
		link.signIn(),
		chromedp.WaitVisible(item+` button.approve`),
		chromedp.SendKeys(item+` input.reason`, "looked at it"),
	); err != nil {
		t.Fatal(err)
	}
	shown, _ := chromedp.Run(b, chromedp.Text(item+` pre.input`))
	host, _ := chromedp.Run(b, chromedp.Text(item+` .host`))
	if !strings.Contains(shown, "$ echo ran >> ran.txt") || host != "on host_a" {
		t.Errorf("the page shows %q %q", shown, host)
	}
	if err := chromedp.Do(b, chromedp.Click(item+` button.approve`), chromedp.WaitVisible(`#recent li[data-id="`+id+`"]`)); err != nil {
		t.Fatal(err)
	}
	r := waitA()
	if r.code != 0 {
		t.Fatalf("host A exited %d", r.code)
	}
	if c := r.call(t, "toolu_web_a"); c.Effect != "allow" || c.Actor != "fleet:alice@127.0.0.1" || !c.Executed {
		t.Errorf("host A's call: %+v", c)
	}
	ranOnce(t, a, "ran.txt")
	f.auditMatches(a, "host_a")
}

// startWeb runs toolgate web (--fleet dsn, unless "") in the approver's
// environment and returns what it prints: the page's address and the
// one-time code.
func (f *fleetDB) startWeb(dsn string) webLink {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	args := []string{"web", "--listen", "127.0.0.1:0", "--json"}
	if dsn != "" {
		args = append(args, "--fleet", dsn)
	}
	cmd := exec.CommandContext(ctx, toolgateBin, args...)
	cmd.Env = f.env.env(nil)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { cancel(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	var link webLink
	if err != nil || json.Unmarshal([]byte(line), &link) != nil || link.URL == "" || link.Code == "" {
		f.t.Fatalf("toolgate web printed %q: %v", line, err)
	}
	return link
}

// webLink is what toolgate web --json prints.
type webLink struct{ URL, Code string }

// signIn opens the page in b and types the code, as the person does.
func (l webLink) signIn() chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.Navigate(l.URL), chromedp.SendKeys(`#code`, l.Code), chromedp.Submit(`#code`))
}

// browser is a real headless Chromium (Debian's) for one test.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, _ := exec.LookPath("chromium")
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	return ctx
}

// Without --fleet, toolgate web serves this machine's daemon's queue: a
// person approves a real claude's ask in a real headless Chromium, and the
// daemon records them from the page's process (peer credentials).
func TestWebApprovesTheLocalQueue(t *testing.T) {
	t.Parallel()
	needTools(t, "chromium")
	w := newWorld(t)
	l, wait := w.runAsync(runArgs{policy: fleetPolicy, script: []modelscript.Step{step(bash("toolu_web_local", "echo ran >> ran.txt"))}})
	id := l.approvalID(t)
	f := &fleetDB{t: t, env: w}
	link := f.startWeb("")
	b := browser(t)
	item := `li.ask[data-id="` + id + `"]`
	if err := chromedp.Do(b, link.signIn(), chromedp.Click(item+` button.approve`),
		chromedp.WaitVisible(`#recent li[data-id="`+id+`"]`)); err != nil {
		t.Fatal(err)
	}
	r := wait()
	if c := r.call(t, "toolu_web_local"); r.code != 0 || c.Effect != "allow" || !strings.HasPrefix(c.Actor, "user:") || !c.Executed {
		t.Errorf("exit %d, call %+v", r.code, c)
	}
	ranOnce(t, w, "ran.txt")
}

// Postgres restarts while a real claude's ask waits on host A: the host
// reconnects, the approver's decision after the restart reaches it, the
// call runs once, and the audit in Postgres is still A's chain.
func TestFleetPostgresRestartsWhileAnAskWaits(t *testing.T) {
	t.Parallel()
	f := newFleetDB(t)
	a := newWorld(t)
	f.host(a, "host_a")
	alice := f.role("alice", "approver")
	l, wait := a.runAsync(runArgs{policy: fleetPolicy, script: []modelscript.Step{step(bash("toolu_restart", "echo ran >> ran.txt"))}})
	id := l.approvalID(t)
	f.pg.Stop()
	f.pg.Start()
	// The ask reaches Postgres (published before the restart, or after it).
	f.until("the ask is in Postgres after the restart", func() bool {
		p := f.pending(alice)
		return len(p) == 1 && p[0].Approval.ID == id
	})
	if code, out := f.env.toolgate("approve", id, "--fleet", alice); code != 0 {
		t.Fatalf("approve --fleet: exit %d %s", code, out)
	}
	r := wait()
	if c := r.call(t, "toolu_restart"); r.code != 0 || c.Effect != "allow" || !c.Executed {
		t.Errorf("exit %d, call %+v", r.code, c)
	}
	ranOnce(t, a, "ran.txt")
	f.auditMatches(a, "host_a")
}

// Postgres is down for the whole ask: the host still gates, the ask
// expires on its clock into a deny (exit 75), and once Postgres is back the
// host publishes it, expired, with its whole chain.
func TestFleetPostgresDownForTheWholeAsk(t *testing.T) {
	t.Parallel()
	f := newFleetDB(t)
	a := newWorld(t)
	f.host(a, "host_a")
	alice := f.role("alice", "approver")
	f.pg.Stop()
	r := a.run(runArgs{policy: fleetPolicy, toolgate: []string{"--approval-timeout", "2s"},
		script: []modelscript.Step{step(bash("toolu_down", "echo ran >> ran.txt"))}})
	if c := r.call(t, "toolu_down"); r.code != 75 || c.Effect != "deny" || c.ReasonCode != "approval_expired" || c.Executed {
		t.Fatalf("exit %d, call %+v", r.code, c)
	}
	f.pg.Start()
	f.auditMatches(a, "host_a")
	conn, err := pgx.Connect(context.Background(), f.pg.SuperDSN(f.db))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var status, outcome string
	conn.QueryRow(context.Background(), `SELECT status, outcome FROM toolgate.approvals WHERE tool_use_id = 'toolu_down'`).Scan(&status, &outcome)
	if status != "expired" || outcome != "expired" {
		t.Errorf("in Postgres: status %q outcome %q", status, outcome)
	}
	if code, out := f.env.toolgate("pending", "--fleet", alice); code != 0 || out != "" {
		t.Errorf("pending after the expiry: exit %d %q", code, out)
	}
}

// The audit chain is the fleet's outbox: audit prune on a host keeps what
// Postgres does not hold yet. While Postgres is down the prune is refused
// (nothing says what it lacks) and the ledger is untouched; once it is
// back and holds the chain, a prune goes through, and the host keeps
// publishing after it: Postgres ends up with the host's whole chain, the
// prune's event and what came after it included, each linked to the one
// before.
func TestFleetPruneKeepsTheOutbox(t *testing.T) {
	t.Parallel()
	f := newFleetDB(t)
	a := newWorld(t)
	f.host(a, "host_a")
	first := a.run(runArgs{policy: allowTouchPolicy, script: []modelscript.Step{step(bash("toolu_fp_1", "touch 1.txt"))}})
	if first.code != 0 {
		t.Fatalf("first run: exit %d", first.code)
	}
	f.auditMatches(a, "host_a")
	f.pg.Stop()
	second := a.run(runArgs{policy: allowTouchPolicy, script: []modelscript.Step{step(bash("toolu_fp_2", "touch 2.txt"))}})
	if second.code != 0 {
		t.Fatalf("second run: exit %d", second.code)
	}
	if code, out := a.toolgate("audit", "prune", "--before", "0s"); code != 69 || !strings.Contains(out, "PostgreSQL") {
		t.Errorf("a prune while Postgres is down: exit %d\n%s", code, out)
	}
	if calls := a.audit(first.report.SessionID); len(calls) != 1 {
		t.Errorf("a refused prune removed calls: %+v", calls)
	}
	f.pg.Start()
	f.auditMatches(a, "host_a")
	code, out := a.toolgate("audit", "prune", "--before", "0s", "--json")
	var rec api.Pruned
	if code != 0 || json.Unmarshal([]byte(out), &rec) != nil || rec.Sessions != 2 || rec.BaseSeq == 0 {
		t.Fatalf("prune: exit %d\n%s", code, out)
	}
	third := a.run(runArgs{policy: allowTouchPolicy, script: []modelscript.Step{step(bash("toolu_fp_3", "touch 3.txt"))}})
	if third.code != 0 {
		t.Fatalf("a run after the prune: exit %d", third.code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	local, err := a.approver().VerifyAudit(ctx)
	if err != nil || !local.Valid || local.Base != rec.BaseSeq {
		t.Fatalf("the host's chain after the prune: %+v %v", local, err)
	}
	conn, err := pgx.Connect(ctx, f.pg.SuperDSN(f.db))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	conn.Exec(ctx, "LISTEN toolgate_published")
	for {
		var have int64
		conn.QueryRow(ctx, "SELECT coalesce(max(seq), 0) FROM toolgate.events WHERE host = 'host_a'").Scan(&have)
		if uint64(have) >= local.HeadSeq {
			break
		}
		if _, err := conn.WaitForNotification(ctx); err != nil {
			t.Fatalf("Postgres never held host_a's events up to %d (it holds %d)", local.HeadSeq, have)
		}
	}
	rows, _ := conn.Query(ctx, "SELECT doc::text FROM toolgate.events WHERE host = 'host_a' AND seq <= $1 ORDER BY seq", local.HeadSeq)
	docs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var check ledger.ChainCheck
	pruned := false
	for _, doc := range docs {
		var e ledger.Event
		json.Unmarshal([]byte(doc), &e)
		if err := check.Next(e.Seq, &e); err != nil {
			t.Fatalf("host_a's chain in Postgres across the prune: %v", err)
		}
		pruned = pruned || e.Kind == ledger.KindAuditPruned
	}
	if seq, hash := check.Last(); seq != local.HeadSeq || hash != local.Head || !pruned {
		t.Errorf("Postgres's chain ends at %d %s (the prune in it: %v); the ledger's at %d %s", seq, hash, pruned, local.HeadSeq, local.Head)
	}
}
