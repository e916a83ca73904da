package ledger

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
)

// record1K is a call input of about 1 KB.
var record1K = json.RawMessage(`{"command":"` + strings.Repeat("x", 1000) + `"}`)

// fsyncFloor measures the machine's floor for durable appends: writing a
// 1 KB record to a plain file and fsyncing it, n times in a row.
func fsyncFloor(tb testing.TB, n int) float64 {
	f, err := os.Create(filepath.Join(tb.TempDir(), "floor"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1024)
	start := time.Now()
	for range n {
		if _, err := f.Write(buf); err != nil {
			tb.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			tb.Fatal(err)
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

// BenchmarkDurableAppend measures durable proposals of 1 KB calls (each a
// record, an index entry and an audit event, fsynced before it returns),
// by one writer and by 16, each on a ledger of its own, against
// write+fsync of 1 KB to a plain file. The three take turns in rounds, so
// that a slow moment of the machine falls on all three; each figure is
// the median of its rounds, and the ratios are those of the medians.
func BenchmarkDurableAppend(b *testing.B) {
	const rounds = 5
	n := max(b.N/rounds, 1)
	one, sixteen := newAppender(b, 1), newAppender(b, 16)
	var floor, oneRates, sixteenRates []float64
	for range rounds {
		floor = append(floor, fsyncFloor(b, n))
		oneRates = append(oneRates, one.rate(b, n))
		sixteenRates = append(sixteenRates, sixteen.rate(b, n))
	}
	f, o, x := medianOf(floor), medianOf(oneRates), medianOf(sixteenRates)
	b.ReportMetric(f, "floor_appends/s")
	b.ReportMetric(o, "one_appends/s")
	b.ReportMetric(x, "sixteen_appends/s")
	b.ReportMetric(o/f, "one_x_floor")
	b.ReportMetric(x/o, "sixteen_x_one")
}

// appender proposes calls of 1 KB to a ledger of its own from a number of
// goroutines.
type appender struct {
	l       *Ledger
	writers int
	next    atomic.Int64 // the last call's number
}

func newAppender(b *testing.B, writers int) *appender {
	l, _ := openTest(b, nil)
	return &appender{l: l, writers: writers}
}

// rate proposes n more calls and returns how many a second it took.
func (a *appender) rate(b *testing.B, n int) float64 {
	last := a.next.Load() + int64(n)
	var wg sync.WaitGroup
	start := time.Now()
	for range a.writers {
		wg.Go(func() {
			for i := a.next.Add(1); i <= last; i = a.next.Add(1) {
				id := "toolu_" + strconv.FormatInt(i, 10)
				if _, _, err := a.l.Propose(ctx, api.Call{ToolUseID: id, SessionID: "s", ToolName: "Bash", Input: record1K}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	rate := float64(n) / time.Since(start).Seconds()
	a.next.Store(last)
	return rate
}

// medianOf is the median of xs.
func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkLedger100k writes 100,000 calls of 1 KB, then reports the
// process's peak and current resident memory (anonymous: heap and stacks;
// file: Badger's mapped pages), the Go heap in use, the disk the ledger
// takes once compacted (allocated blocks), and the time to reopen the
// ledger. The process runs under the soft memory limit toolgate serve
// sets (44 MiB), as the ledger does there. Run it with -benchtime 1x.
func BenchmarkLedger100k(b *testing.B) {
	const n = 100_000
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(44 << 20))
	for b.Loop() {
		dir := b.TempDir()
		l, err := Open(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1); i <= n; i = next.Add(1) {
					id := "toolu_" + strconv.FormatInt(i, 10)
					if _, _, err := l.Propose(ctx, api.Call{ToolUseID: id, SessionID: "s", ToolName: "Bash", Input: record1K}); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		runtime.GC()
		b.ReportMetric(float64(procStatus(b, "VmHWM"))/(1<<20), "peak_rss_MB")
		b.ReportMetric(float64(procStatus(b, "VmRSS"))/(1<<20), "rss_MB")
		b.ReportMetric(float64(procStatus(b, "RssAnon"))/(1<<20), "rss_anon_MB")
		b.ReportMetric(float64(procStatus(b, "RssFile"))/(1<<20), "rss_file_MB")
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap_MB")

		if _, err := l.Compact(ctx); err != nil {
			b.Fatal(err)
		}
		disk := DiskUsage(dir)
		b.ReportMetric(float64(disk)/(1<<20), "disk_MB")
		b.ReportMetric(float64(disk)/n, "disk_B_per_call")
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		l, err = Open(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "open_ms")
		if c, err := l.Call(ctx, "toolu_99999"); err != nil || c.Executions != 0 {
			b.Fatal(err)
		}
		l.Close()
	}
}

// procStatus reads a memory figure of this process from /proc, in bytes.
func procStatus(tb testing.TB, field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// BenchmarkLedgerDisk100k reports the disk a ledger takes per call after
// 100,000 calls and a compaction (allocated blocks), for three shapes of
// call: a proposal of 1 KB of one repeated letter (BenchmarkLedger100k's,
// which compresses to almost nothing); a whole gated call (proposed,
// decided with its write-back, run, what the model saw: what toolgate run
// records) whose 1 KB input is text-like (words and numbers); and the
// same whose output, what the model saw, is 1 KB of such text too. Run it
// with -benchtime 1x.
func BenchmarkLedgerDisk100k(b *testing.B) {
	const n = 100_000
	words := strings.Fields("the go test run build make git commit push pull status diff log main src internal pkg cmd file path read " +
		"write edit grep find sed awk echo cat ls cd mkdir rm cp mv chmod export env func return if else for range err nil string")
	text := func(i int64) json.RawMessage {
		var sb strings.Builder
		x := uint64(i)*1442695040888963407 + 1
		for sb.Len() < 1000 {
			x = x*6364136223846793005 + 1442695040888963407
			sb.WriteString(words[(x>>33)%uint64(len(words))])
			if x>>60 == 0 {
				sb.WriteString(" " + strconv.FormatUint((x>>20)%10000, 10))
			}
			sb.WriteByte(' ')
		}
		return json.RawMessage(`{"command":"` + sb.String()[:1000] + `","description":"step"}`)
	}
	for _, shape := range []string{"proposals", "gated", "gated_output"} {
		b.Run("shape="+shape, func(b *testing.B) {
			for b.Loop() {
				dir := b.TempDir()
				l, err := Open(dir, Options{})
				if err != nil {
					b.Fatal(err)
				}
				var next atomic.Int64
				var wg sync.WaitGroup
				for range 16 {
					wg.Go(func() {
						for i := next.Add(1); i <= n; i = next.Add(1) {
							c := api.Call{ToolUseID: "toolu_" + strconv.FormatInt(i, 10), SessionID: "ses_01M8S0CR3ZZTBM8VEVDPD3B3PS", ToolName: "Bash", Input: record1K}
							if shape == "proposals" {
								if _, _, err := l.Propose(ctx, c); err != nil {
									b.Error(err)
									return
								}
								continue
							}
							c.Input = text(i)
							v := api.Verdict{Effect: api.EffectAllow, ReasonCode: "default", Source: api.SourcePolicy}
							if _, _, err := l.Record(ctx, c, v, true); err != nil {
								b.Error(err)
								return
							}
							o := api.Outcome{ToolUseID: c.ToolUseID, Ran: true, Outcome: "ok", Seen: "(Bash completed with no output)"}
							if shape == "gated_output" {
								o.Seen = gjson.GetBytes(text(n+i), "command").Str
							}
							if _, err := l.RecordOutcomes(ctx, c.SessionID, []api.Outcome{o}); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				if _, err := l.Compact(ctx); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(DiskUsage(dir))/n, "disk_B_per_call")
				l.Close()
			}
		})
	}
}
