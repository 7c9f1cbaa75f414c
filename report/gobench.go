package report

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/report/metrics"
)

// The bench in Go's benchmark format (golang.org/x/perf/benchfmt), which
// benchstat and github-action-benchmark read: one line per lock (per run
// with --repeat), named BenchmarkLock/<lock>/clients=N/keys=K/key-dist=D,
// its iteration count the cycles, then value-unit pairs. ns/op is the wall
// time per completed cycle over all clients (1e9 / cycles/s); every latency
// is in ns. Unit lines tell benchstat which way is better.

// gobenchUnits are the units the bench lines carry, in their order, with
// which way is better (benchfmt Unit metadata).
var gobenchUnits = []struct{ unit, better string }{
	{"ns/op", "lower"},
	{"cycles/s", "higher"},
	{"acquire-p50-ns", "lower"},
	{"acquire-p99-ns", "lower"},
	{"release-p99-ns", "lower"},
	{"cycle-p99-ns", "lower"},
	{"handoff-p50-ns", "lower"},
	{"handoff-p99-ns", "lower"},
	{"failed-acquires/op", "lower"},
	{"fairness", "higher"},
	{"redis-cmds/op", "lower"},
	{"redis-us/op", "lower"},
	{"recording-cost-%", "lower"},
}

// WriteGoBench writes b in Go's benchmark format. With --repeat, every run
// is a line (benchstat's samples) with what each run measured, cycles/s and
// ns/op; the median run's line carries the latencies and the rest too.
func WriteGoBench(w io.Writer, b *metrics.Bench) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "goos: %s\ngoarch: %s\npkg: github.com/lockchaos/lockchaos\n", runtime.GOOS, runtime.GOARCH)
	if b.Machine != "" {
		fmt.Fprintf(&sb, "cpu: %s\n", oneLine(b.Machine))
	}
	fmt.Fprintf(&sb, "lockchaos-backend: %s\nlockchaos-nodes: %d\nlockchaos-duration: %s\nlockchaos-mode: %s\n", oneLine(b.Backend), b.Nodes, oneLine(b.Duration), oneLine(b.Mode))
	for _, u := range gobenchUnits {
		fmt.Fprintf(&sb, "Unit %s better=%s\n", u.unit, u.better)
	}
	dur, _ := time.ParseDuration(b.Duration)
	for _, l := range b.Locks {
		name := fmt.Sprintf("BenchmarkLock/%s/clients=%d/keys=%d/key-dist=%s", benchNamePart(l.Lock), b.Clients, b.Keys, benchNamePart(b.KeyDist))
		runs := l.Runs
		if len(runs) < 2 {
			runs = []float64{l.Throughput}
		}
		median := -1
		for i, tp := range runs {
			if median < 0 && tp == l.Throughput {
				median = i
			}
		}
		if median < 0 {
			median = 0
		}
		for i, tp := range runs {
			if tp <= 0 {
				continue // nothing completed: no line benchstat could use
			}
			if i == median {
				sb.WriteString(name + "\t" + benchValues(l))
				continue
			}
			n := int64(math.Round(tp * dur.Seconds()))
			fmt.Fprintf(&sb, "%s\t%d\t%s ns/op\t%s cycles/s\n", name, max(n, 1), num(1e9/tp), num(tp))
		}
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// benchValues is the median run's iterations and values, and the newline.
func benchValues(l metrics.BenchLock) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d\t%s ns/op\t%s cycles/s", max(l.Cycles, 1), num(1e9/l.Throughput), num(l.Throughput))
	pair := func(v float64, unit string) { fmt.Fprintf(&sb, "\t%s %s", num(v), unit) }
	if a, ok := l.LatencyUS["acquire"]; ok && a.Count > 0 {
		pair(a.P50*1e3, "acquire-p50-ns")
		pair(a.P99*1e3, "acquire-p99-ns")
	}
	if r, ok := l.LatencyUS["release"]; ok && r.Count > 0 {
		pair(r.P99*1e3, "release-p99-ns")
	}
	if c, ok := l.LatencyUS["cycle"]; ok && c.Count > 0 {
		pair(c.P99*1e3, "cycle-p99-ns")
	}
	if h, ok := l.LatencyUS["handoff"]; ok && h.Count > 0 {
		pair(h.P50*1e3, "handoff-p50-ns")
		pair(h.P99*1e3, "handoff-p99-ns")
	}
	if l.Cycles > 0 {
		pair(float64(l.FailedAcq)/float64(l.Cycles), "failed-acquires/op")
	}
	pair(l.Fairness, "fairness")
	if s := l.Server; s != nil {
		pair(s.CommandsPerCycle, "redis-cmds/op")
		pair(s.UsecPerCycle, "redis-us/op")
	}
	if l.NoHistoryThroughput > 0 {
		pair(l.RecordingCostPct, "recording-cost-%")
	}
	sb.WriteString("\n")
	return sb.String()
}

// num formats a value as benchfmt reads it (a Go float, no exponent for
// the usual magnitudes).
func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.6g", v)
}

// benchNamePart keeps a name part one field: benchfmt splits a line on
// white space and the name on "/".
func benchNamePart(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == '\t' || r == '\n' {
			return '_'
		}
		return r
	}, s)
}

// oneLine keeps a configuration value on its line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
