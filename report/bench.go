package report

import (
	"fmt"
	"sort"
	"strings"
)

// The bench document: bench.json's numbers per lock and the yardsticks
// measured beside them, and its Markdown table (bench.md). The runner
// fills it.

// BenchLock is one lock's numbers.
type BenchLock struct {
	Lock       string             `json:"lock"`
	Kind       string             `json:"kind"`
	Nodes      int                `json:"nodes"`
	Throughput float64            `json:"throughput"`
	Cycles     int64              `json:"cycles"`
	FailedAcq  int64              `json:"failed_acquires"`
	Fairness   float64            `json:"fairness"`
	LatencyUS  map[string]Latency `json:"latency_us"`
	Server     *ServerCost        `json:"server,omitempty"`
	// NoHistoryThroughput is the same run with recording off (the median
	// of Repeat runs).
	NoHistoryThroughput float64 `json:"no_history_throughput,omitempty"`
	// Runs and NoHistoryRuns are every run's throughput when Repeat > 1.
	Runs          []float64 `json:"runs,omitempty"`
	NoHistoryRuns []float64 `json:"no_history_runs,omitempty"`
	Verdict       string    `json:"verdict"`
	Dir           string    `json:"dir"`
	// RecordingCostPct is the throughput recording costs, in percent of the
	// recording-off throughput: the median over the on/off pairs (--overhead).
	RecordingCostPct float64 `json:"recording_cost_pct,omitempty"`
	// Interrupted: an interrupt cut this lock's (median) run short.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Bench is the whole comparison.
type Bench struct {
	Clients  int         `json:"clients"`
	Keys     int         `json:"keys"`
	Nodes    int         `json:"nodes"`
	KeyDist  string      `json:"key_dist"`
	Repeat   int         `json:"repeat,omitempty"`
	Duration string      `json:"duration"`
	Mode     string      `json:"mode"`
	Backend  string      `json:"backend"`
	Machine  string      `json:"machine"`
	Locks    []BenchLock `json:"locks"`
	// Ceiling from redis-benchmark against node 1 (requests/s).
	SetNXPX   float64 `json:"redis_benchmark_set_nx_px,omitempty"`
	EvalSHA   float64 `json:"redis_benchmark_evalsha,omitempty"`
	CeilingCS float64 `json:"ceiling_cycles_per_sec,omitempty"`
	// GoRedisCS is the same cycle (SET NX PX, then the unlock script) from
	// as many bare go-redis clients, connected as the bench's are, with no
	// lock code, no harness and no recording: what the client library alone
	// reaches, to tell its cost from the harness's.
	GoRedisCS float64 `json:"go_redis_cycles_per_sec,omitempty"`
	// CeilingRuns and GoRedisRuns are every measurement with Repeat > 1
	// (the fields above are their medians).
	CeilingRuns []float64 `json:"ceiling_runs,omitempty"`
	GoRedisRuns []float64 `json:"go_redis_runs,omitempty"`
	// SetRTTP50US is the p50 of a single SET round trip (one go-redis
	// client, same node), the yardstick for hand-off latency.
	SetRTTP50US float64 `json:"set_rtt_p50_us"`
	// FanOutRTTP50US is the p50 of one SET to every node at once (bare
	// go-redis, a goroutine per node): the yardstick for Redlock's acquire.
	FanOutRTTP50US float64 `json:"fan_out_rtt_p50_us,omitempty"`
	// NotRun are the locks asked for that an interrupt left unbenched.
	NotRun []string `json:"not_run,omitempty"`
}

// Spread is "min–max" of vs.
func Spread(vs []float64) string {
	lo, hi := vs[0], vs[0]
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	return fmt.Sprintf("%.0f–%.0f", lo, hi)
}

// BenchMarkdown is the comparison table.
func BenchMarkdown(b *Bench) string {
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
	locks := append([]BenchLock{}, b.Locks...)
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
			FormatUS(l.LatencyUS["acquire"].P50), FormatUS(l.LatencyUS["acquire"].P99), fmtOpt(ho), ratio,
			FormatUS(l.LatencyUS["cycle"].P99), l.FailedAcq, l.Fairness, cmds, usec, ovh)
	}
	return sb.String()
}

func fmtOpt(l Latency) string {
	if l.Count == 0 {
		return "–"
	}
	return FormatUS(l.P50)
}
