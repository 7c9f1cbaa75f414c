package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lockchaos/lockchaos/report/metrics"
)

// The bench document's Markdown table (bench.md); its numbers are
// metrics.Bench.

// Spread is "min–max" of vs.
func Spread(vs []float64) string {
	lo, hi := vs[0], vs[0]
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	return fmt.Sprintf("%.0f–%.0f", lo, hi)
}

// BenchMarkdown is the comparison table.
func BenchMarkdown(b *metrics.Bench) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# lockchaos bench\n\n%d clients, %d keys (%s), %s, %s loop, backend %s. Machine: %s.\n\n", b.Clients, b.Keys, b.KeyDist, b.Duration, b.Mode, b.Backend, b.Machine)
	if b.CeilingCS > 0 {
		fmt.Fprintf(&sb, "redis-benchmark -c %d against node 1: SET NX PX %.0f/s, EVALSHA unlock %.0f/s → ceiling %.0f cycles/s", b.Clients, b.SetNXPX, b.EvalSHA, b.CeilingCS)
		if len(b.CeilingRuns) > 1 {
			fmt.Fprintf(&sb, " (median of %d, spread %s)", len(b.CeilingRuns), Spread(b.CeilingRuns))
		}
		sb.WriteString(".\n\n")
	}
	if b.GoRedisCS > 0 && b.CeilingCS > 0 {
		fmt.Fprintf(&sb, "Bare go-redis, %d clients each on its own key, the same two commands with no lock code, harness or recording: %.0f cycles/s", b.Clients, b.GoRedisCS)
		if len(b.GoRedisRuns) > 1 {
			fmt.Fprintf(&sb, " (median of %d, spread %s)", len(b.GoRedisRuns), Spread(b.GoRedisRuns))
		}
		fmt.Fprintf(&sb, " = %.2f of the ceiling (the client library's own share of any gap).\n\n", b.GoRedisCS/b.CeilingCS)
	}
	fmt.Fprintf(&sb, "Single SET round trip p50: %.0f µs.", b.SetRTTP50US)
	if b.FanOutRTTP50US > 0 && b.SetRTTP50US > 0 {
		fmt.Fprintf(&sb, " One SET to all %d nodes at once (bare go-redis): %.0f µs p50 = %.1f× (the floor for a Redlock acquire).", b.Nodes, b.FanOutRTTP50US, b.FanOutRTTP50US/b.SetRTTP50US)
	}
	sb.WriteString("\n\n")
	if len(b.NotRun) > 0 {
		fmt.Fprintf(&sb, "**Interrupted**: not run: %s.\n\n", strings.Join(b.NotRun, ", "))
	}
	if b.Repeat > 1 {
		fmt.Fprintf(&sb, "Each lock ran %d times; its row is the median run, cycles/s with the spread of all runs.\n\n", b.Repeat)
	}
	sb.WriteString("| lock | kind | cycles/s | of ceiling | acquire p50 | acquire p99 | hand-off p50 | hand-off/RTT | cycle p99 | failed acq | fairness | Redis cmds/cycle | Redis µs/cycle | recording overhead |\n")
	sb.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	locks := append([]metrics.BenchLock{}, b.Locks...)
	sort.SliceStable(locks, func(i, j int) bool { return locks[i].Throughput > locks[j].Throughput })
	for _, l := range locks {
		ceil, ovh, cmds, usec, ratio := "–", "–", "–", "–", "–"
		if b.CeilingCS > 0 {
			ceil = fmt.Sprintf("%.2f", l.Throughput/b.CeilingCS)
		}
		if l.NoHistoryThroughput > 0 {
			ovh = fmt.Sprintf("%+.1f%%", l.RecordingCostPct)
		}
		if l.Server != nil {
			cmds, usec = fmt.Sprintf("%.2f", l.Server.CommandsPerCycle), fmt.Sprintf("%.1f", l.Server.UsecPerCycle)
		}
		ho := l.LatencyUS["handoff"]
		if ho.Count > 0 && b.SetRTTP50US > 0 {
			ratio = fmt.Sprintf("%.1f×", ho.P50/b.SetRTTP50US)
		}
		tp := fmt.Sprintf("%.0f", l.Throughput)
		if len(l.Runs) > 1 {
			tp += " (" + Spread(l.Runs) + ")"
		}
		if len(l.NoHistoryRuns) > 1 {
			ovh += " (off: " + Spread(l.NoHistoryRuns) + ")"
		}
		name := l.Lock
		if l.Interrupted {
			name += " (interrupted)"
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %.3f | %s | %s | %s |\n", name, l.Kind, tp, ceil,
			metrics.FormatUS(l.LatencyUS["acquire"].P50), metrics.FormatUS(l.LatencyUS["acquire"].P99), fmtOpt(ho), ratio,
			metrics.FormatUS(l.LatencyUS["cycle"].P99), l.FailedAcq, l.Fairness, cmds, usec, ovh)
	}
	sb.WriteString(pipeLines(locks))
	return sb.String()
}

// pipeLines shows apart what the lock-client protocol cost the driver
// locks (metrics.OpPipe): per request, and per cycle against the cycle.
func pipeLines(locks []metrics.BenchLock) string {
	var sb strings.Builder
	for _, l := range locks {
		p := l.LatencyUS[metrics.OpPipe]
		if p.Count == 0 {
			continue
		}
		if sb.Len() == 0 {
			sb.WriteString("\nThe driver locks' numbers above include the lock-client protocol: each request's round trip less the driver's own time in it (its t0–t1), by lock:\n\n")
		}
		fmt.Fprintf(&sb, "- %s: %s p50, %s p99 per request (%d requests)", l.Lock, metrics.FormatUS(p.P50), metrics.FormatUS(p.P99), p.Count)
		if l.Cycles > 0 {
			perCycle := p.Mean * float64(p.Count) / float64(l.Cycles)
			fmt.Fprintf(&sb, "; %s a cycle", metrics.FormatUS(perCycle))
			if c := l.LatencyUS[metrics.OpCycle]; c.Mean > 0 {
				fmt.Fprintf(&sb, ", %.0f%% of the mean cycle (%s)", 100*perCycle/c.Mean, metrics.FormatUS(c.Mean))
			}
		}
		sb.WriteString(".\n")
	}
	return sb.String()
}

func fmtOpt(l metrics.Latency) string {
	if l.Count == 0 {
		return "–"
	}
	return metrics.FormatUS(l.P50)
}
