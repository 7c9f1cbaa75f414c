package metrics

import (
	"encoding/json"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
)

// clone deep-copies results through JSON, as a baseline read from disk is.
func clone(t *testing.T, r *Results) *Results {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var out Results
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func TestCompare(t *testing.T) {
	base := thresholdResults(t)
	base.Scenario, base.Lock = "smoke", "simple"
	tests := []struct {
		name      string
		mutate    func(base, cur *Results)
		maxReg    float64
		regressed bool
		worse     []string // metrics or checks expected to be flagged
	}{
		{name: "itself", mutate: func(_, _ *Results) {}},
		{name: "baseline had 3x the throughput", mutate: func(b, _ *Results) { b.Stats.Throughput *= 3 },
			regressed: true, worse: []string{"throughput"}},
		{name: "5% slower throughput is within 10%", mutate: func(_, c *Results) { c.Stats.Throughput *= 0.95 }},
		{name: "5% slower throughput with max 1%", mutate: func(_, c *Results) { c.Stats.Throughput *= 0.95 }, maxReg: 0.01,
			regressed: true, worse: []string{"throughput"}},
		{name: "faster is never a regression", mutate: func(_, c *Results) {
			c.Stats.Throughput *= 2
			l := c.Stats.LatencyUS[OpAcquire]
			l.P99 /= 2
			c.Stats.LatencyUS[OpAcquire] = l
		}},
		{name: "p99 doubled", mutate: func(_, c *Results) {
			l := c.Stats.LatencyUS[OpAcquire]
			l.P99 *= 2
			c.Stats.LatencyUS[OpAcquire] = l
		}, regressed: true, worse: []string{"acquire.p99"}},
		{name: "tiny absolute latency change is noise", mutate: func(b, c *Results) {
			bl, cl := b.Stats.LatencyUS[OpCycle], c.Stats.LatencyUS[OpCycle]
			bl.P50, cl.P50 = 40, 55 // +37% but 15µs
			b.Stats.LatencyUS[OpCycle], c.Stats.LatencyUS[OpCycle] = bl, cl
		}},
		{name: "fairness dropped", mutate: func(_, c *Results) { c.Stats.Fairness = 0.5 }, regressed: true, worse: []string{"fairness"}},
		{name: "verdict valid to invalid", mutate: func(_, c *Results) {
			c.Verdict = "invalid"
			c.Checks["mutex"] = checker.CheckResult{Verdict: "invalid", Violations: 1}
		}, regressed: true, worse: []string{"verdict", "mutex"}},
		{name: "verdict valid to unknown", mutate: func(_, c *Results) { c.Checks["mutex"] = checker.CheckResult{Verdict: "unknown"} },
			regressed: true, worse: []string{"mutex"}},
		{name: "verdict invalid to valid is better", mutate: func(_, c *Results) { c.Checks["fencing"] = checker.CheckResult{Verdict: "valid"} }},
		{name: "new check that is invalid", mutate: func(_, c *Results) { c.Checks["liveness"] = checker.CheckResult{Verdict: "invalid"} },
			regressed: true, worse: []string{"liveness"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, c := clone(t, base), clone(t, base)
			tc.mutate(b, c)
			cmp := Compare(b, c, tc.maxReg)
			if cmp.Regressed != tc.regressed {
				t.Errorf("regressed = %v, want %v\nmetrics %+v\nverdicts %+v", cmp.Regressed, tc.regressed, cmp.Metrics, cmp.Verdicts)
			}
			flagged := map[string]bool{}
			for _, m := range cmp.Metrics {
				if m.Regressed {
					flagged[m.Name] = true
				}
			}
			for _, v := range cmp.Verdicts {
				if v.Worse {
					flagged[v.Check] = true
				}
			}
			for _, w := range tc.worse {
				if !flagged[w] {
					t.Errorf("%s not flagged (flagged: %v)", w, flagged)
				}
			}
			if len(flagged) != len(tc.worse) {
				t.Errorf("flagged %v, want exactly %v", flagged, tc.worse)
			}
		})
	}
}
