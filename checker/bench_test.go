package checker

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// synthHistory writes a history of about n events: 16 clients over 64 keys
// doing correct cycles (acquire, read, write, release) with server events,
// as a real run records them, in the form ext names (".lch" as runs write
// it, or ".jsonl"). It returns the path.
func synthHistory(tb testing.TB, dir string, n int, ext string) string {
	tb.Helper()
	p := filepath.Join(dir, fmt.Sprintf("h%d%s", n, ext))
	if _, err := os.Stat(p); err == nil {
		return p
	}
	w, err := history.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	w.Append(&history.Event{Op: history.OpRun, Client: -1, Meta: map[string]any{"ttl_ms": 100, "honours": true, "topology": "single", "resource": "counter"}})
	const keys, clients = 64, 16
	r := rand.New(rand.NewPCG(1, 2))
	val := make([]int64, keys)
	free := make([]int64, keys) // when each key is free again
	now := make([]int64, clients)
	for i := 0; i < n; {
		c := r.IntN(clients)
		k := r.IntN(keys)
		key := fmt.Sprintf("k%d", k)
		t := max(now[c], free[k])
		ev := []history.Event{
			{T: t, End: t + 100_000, Client: c, Key: key, Op: history.OpAcquire, Result: history.OK, Token: "0123456789abcdef0123456789abcdef", Depth: 1, Deadline: t + 100e6},
			{T: t + 90_000, Client: -1, Key: key, Op: history.OpServer, Node: "n1", Detail: "set"},
			{T: t + 150_000, End: t + 150_000, Client: c, Key: key, Op: history.OpRead, Value: val[k]},
			{T: t + 300_000, End: t + 310_000, Client: c, Key: key, Op: history.OpWrite, Value: val[k] + 1, Result: history.OK},
			{T: t + 400_000, End: t + 500_000, Client: c, Key: key, Op: history.OpRelease, Token: "0123456789abcdef0123456789abcdef", Result: history.OK},
			{T: t + 450_000, Client: -1, Key: key, Op: history.OpServer, Node: "n1", Detail: "del"},
		}
		for j := range ev {
			w.Append(&ev[j])
		}
		val[k]++
		free[k] = t + 500_000
		now[c] = t + 600_000
		i += len(ev)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return p
}

// BenchmarkCheckFile checks synthetic histories of 1M and 10M events in
// the compact form runs write (10M is skipped with -short; 100M too unless
// LOCKCHAOS_BENCH_100M=1: it writes about 1 GB). It reports events/s and the
// peak heap, which streaming keeps independent of the length.
func BenchmarkCheckFile(b *testing.B) {
	dir := os.Getenv("LOCKCHAOS_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	for _, n := range []int{1_000_000, 10_000_000, 100_000_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			if n > 1_000_000 && testing.Short() {
				b.Skip("10M events with -short")
			}
			if n > 10_000_000 && os.Getenv("LOCKCHAOS_BENCH_100M") == "" {
				b.Skip("100M events without LOCKCHAOS_BENCH_100M=1")
			}
			p := synthHistory(b, dir, n, history.CompactExt)
			b.ResetTimer()
			var peak uint64
			for i := 0; i < b.N; i++ {
				done := make(chan struct{})
				go func() {
					var ms runtime.MemStats
					tick := time.NewTicker(20 * time.Millisecond)
					defer tick.Stop()
					for {
						select {
						case <-done:
							return
						case <-tick.C:
						}
						runtime.ReadMemStats(&ms)
						peak = max(peak, ms.HeapAlloc)
					}
				}()
				r, err := CheckFile(p, Options{})
				close(done)
				if err != nil {
					b.Fatal(err)
				}
				if r.Verdict != Valid {
					b.Fatalf("synthetic correct history judged %s: %+v", r.Verdict, r.Violations)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		})
	}
}
