package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/ledger"
)

const (
	loadHosts = 16
	loadCalls = 200
)

// BenchmarkFleetLoad: 16 hosts (16 ledgers, each with its own link to the
// fleet and its own login role) record 200 calls each, as the gate does
// (one durable transaction a call: proposal, verdict, write-back), while
// they publish to one PostgreSQL on this machine. Beside it, in the same
// run, the same calls with no fleet: the floor. It reports the hosts'
// local throughput with and without publishing (the hook path's cost),
// the rows per second Postgres took, and the delay from a local commit to
// its row being visible in Postgres (p50, p99).
func BenchmarkFleetLoad(b *testing.B) {
	pg := pgtest.Start(b)
	db := pg.NewDatabase(ctx)
	if _, err := Init(ctx, pg.SuperDSN(db)); err != nil {
		b.Fatal(err)
	}
	dsns := make([]string, loadHosts)
	for i := range dsns {
		pw := pgtest.Password()
		name := fmt.Sprintf("host_%02d", i)
		if err := AddRole(ctx, pg.SuperDSN(db), name, "host", pw); err != nil {
			b.Fatal(err)
		}
		dsns[i] = pg.DSN(db, name, pw)
	}
	super, err := pgx.Connect(ctx, pg.SuperDSN(db))
	if err != nil {
		b.Fatal(err)
	}
	defer super.Close(ctx)
	var localOnly, withFleet, rows, rowsPerSec, p50, p99, tableBytes, indexBytes, cpuLocal, cpuFleet float64
	for range b.N {
		c0 := cpuTime()
		localOnly += loadRound(b, nil, "").Seconds()
		c1 := cpuTime()
		super.Exec(ctx, "TRUNCATE toolgate.events, toolgate.decisions, toolgate.approvals")
		d := loadRound(b, dsns, pg.SuperDSN(db))
		withFleet += d.Seconds()
		cpuLocal, cpuFleet = cpuLocal+(c1-c0).Seconds(), cpuFleet+(cpuTime()-c1).Seconds()
		var n int64
		var first, last time.Time
		var q50, q99 float64
		if err := super.QueryRow(ctx, `SELECT count(*), min(time), max(published_at),
			percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM published_at - time)),
			percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM published_at - time)) FROM toolgate.events`).
			Scan(&n, &first, &last, &q50, &q99); err != nil {
			b.Fatal(err)
		}
		var table, index float64
		if err := super.QueryRow(ctx, `SELECT pg_table_size('toolgate.events'), pg_indexes_size('toolgate.events')`).Scan(&table, &index); err != nil {
			b.Fatal(err)
		}
		tableBytes += table / float64(n)
		indexBytes += index / float64(n)
		rows += float64(n)
		rowsPerSec += float64(n) / last.Sub(first).Seconds()
		p50 += q50 * 1000
		p99 += q99 * 1000
	}
	calls := float64(loadHosts * loadCalls)
	N := float64(b.N)
	b.ReportMetric(calls/(localOnly/N), "local_calls/s")
	b.ReportMetric(calls/(withFleet/N), "fleet_local_calls/s")
	b.ReportMetric((calls/(withFleet/N))/(calls/(localOnly/N)), "x_local")
	b.ReportMetric(rows/N, "rows")
	b.ReportMetric(rowsPerSec/N, "rows/s")
	b.ReportMetric(p50/N, "visible_p50_ms")
	b.ReportMetric(p99/N, "visible_p99_ms")
	// The hosts' own CPU (this process: ledgers and publishers, not
	// Postgres) per call, without and with publishing.
	b.ReportMetric(cpuLocal/N/calls*1e6, "host_cpu_us/call_local")
	b.ReportMetric(cpuFleet/N/calls*1e6, "host_cpu_us/call_fleet")
	b.ReportMetric(tableBytes/N, "table_B/row")
	b.ReportMetric(indexBytes/N, "index_B/row")
	b.ReportMetric(0, "ns/op")
}

// loadRound records loadCalls calls on each of loadHosts fresh ledgers at
// once and returns how long the hosts took to commit them; with dsns, each
// host publishes to the fleet, and the round also waits until Postgres
// holds every host's whole chain.
func loadRound(b *testing.B, dsns []string, superDSN string) time.Duration {
	b.Helper()
	ls := make([]*ledger.Ledger, loadHosts)
	for i := range ls {
		l, err := ledger.Open(filepath.Join(b.TempDir(), "ledger"), ledger.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		ls[i] = l
	}
	runCtx, cancel := context.WithCancel(ctx)
	var nodes sync.WaitGroup
	defer func() { cancel(); nodes.Wait() }()
	var listener *pgx.Conn
	if dsns != nil {
		var err error
		if listener, err = pgx.Connect(ctx, superDSN); err != nil {
			b.Fatal(err)
		}
		defer listener.Close(ctx)
		if _, err := listener.Exec(ctx, "LISTEN toolgate_published"); err != nil {
			b.Fatal(err)
		}
		for i, l := range ls {
			n, err := NewNode(dsns[i], l, func(context.Context, Decided) error { return nil }, slog.New(slog.NewTextHandler(os.Stderr, nil)))
			if err != nil {
				b.Fatal(err)
			}
			nodes.Add(1)
			go func() { defer nodes.Done(); defer n.Close(); n.Run(runCtx) }()
		}
	}
	input, _ := json.Marshal(map[string]string{"command": "go test ./...", "description": "run the tests"})
	start := time.Now()
	var wg sync.WaitGroup
	for h, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range loadCalls {
				c := api.Call{ToolUseID: fmt.Sprintf("toolu_%d_%d", h, i), SessionID: "ses_load", ToolName: "Bash", Input: input}
				v := api.Verdict{Effect: api.EffectAllow, RuleID: "allow-tests", Source: api.SourcePolicy}
				if _, _, err := l.Record(ctx, c, v, true); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	if dsns == nil {
		return d
	}
	// Every host's whole chain, visible in Postgres.
	want := map[string]uint64{}
	for i, l := range ls {
		want[fmt.Sprintf("host_%02d", i)] = headSeq(l)
	}
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Minute)
	defer wcancel()
	for len(want) > 0 {
		nt, err := listener.WaitForNotification(wctx)
		if err != nil {
			b.Fatalf("Postgres never held every chain: %d hosts behind: %v", len(want), err)
		}

		var host string
		var seq uint64
		fmt.Sscanf(nt.Payload, "%s %d", &host, &seq)
		if seq >= want[host] {
			delete(want, host)
		}
	}
	return d
}

// cpuTime is this process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
