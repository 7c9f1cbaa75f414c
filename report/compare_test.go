package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/report/metrics"
)

// clone deep-copies results through JSON, as a baseline read from disk is.
func clone(t *testing.T, r *metrics.Results) *metrics.Results {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var out metrics.Results
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func TestCompare(t *testing.T) {
	base := thresholdResults()
	base.Scenario, base.Lock = "smoke", "simple"
	tests := []struct {
		name      string
		mutate    func(base, cur *metrics.Results)
		maxReg    float64
		regressed bool
		worse     []string // metrics or checks expected to be flagged
	}{
		{name: "itself", mutate: func(_, _ *metrics.Results) {}},
		{name: "baseline had 3x the throughput", mutate: func(b, _ *metrics.Results) { b.Stats.Throughput *= 3 },
			regressed: true, worse: []string{"throughput"}},
		{name: "5% slower throughput is within 10%", mutate: func(_, c *metrics.Results) { c.Stats.Throughput *= 0.95 }},
		{name: "5% slower throughput with max 1%", mutate: func(_, c *metrics.Results) { c.Stats.Throughput *= 0.95 }, maxReg: 0.01,
			regressed: true, worse: []string{"throughput"}},
		{name: "faster is never a regression", mutate: func(_, c *metrics.Results) {
			c.Stats.Throughput *= 2
			l := c.Stats.LatencyUS[metrics.OpAcquire]
			l.P99 /= 2
			c.Stats.LatencyUS[metrics.OpAcquire] = l
		}},
		{name: "p99 doubled", mutate: func(_, c *metrics.Results) {
			l := c.Stats.LatencyUS[metrics.OpAcquire]
			l.P99 *= 2
			c.Stats.LatencyUS[metrics.OpAcquire] = l
		}, regressed: true, worse: []string{"acquire.p99"}},
		{name: "tiny absolute latency change is noise", mutate: func(b, c *metrics.Results) {
			bl, cl := b.Stats.LatencyUS[metrics.OpCycle], c.Stats.LatencyUS[metrics.OpCycle]
			bl.P50, cl.P50 = 40, 55 // +37% but 15µs
			b.Stats.LatencyUS[metrics.OpCycle], c.Stats.LatencyUS[metrics.OpCycle] = bl, cl
		}},
		{name: "fairness dropped", mutate: func(_, c *metrics.Results) { c.Stats.Fairness = 0.5 }, regressed: true, worse: []string{"fairness"}},
		{name: "verdict valid to invalid", mutate: func(_, c *metrics.Results) {
			c.Verdict = "invalid"
			c.Checks["mutex"] = checker.CheckResult{Verdict: "invalid", Violations: 1}
		}, regressed: true, worse: []string{"verdict", "mutex"}},
		{name: "verdict valid to unknown", mutate: func(_, c *metrics.Results) { c.Checks["mutex"] = checker.CheckResult{Verdict: "unknown"} },
			regressed: true, worse: []string{"mutex"}},
		{name: "verdict invalid to valid is better", mutate: func(_, c *metrics.Results) { c.Checks["fencing"] = checker.CheckResult{Verdict: "valid"} }},
		{name: "new check that is invalid", mutate: func(_, c *metrics.Results) { c.Checks["liveness"] = checker.CheckResult{Verdict: "invalid"} },
			regressed: true, worse: []string{"liveness"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, c := clone(t, base), clone(t, base)
			tc.mutate(b, c)
			cmp := metrics.Compare(b, c, tc.maxReg)
			if cmp.Regressed != tc.regressed {
				var buf bytes.Buffer
				_ = WriteCompareText(&buf, cmp)
				t.Errorf("regressed = %v, want %v\n%s", cmp.Regressed, tc.regressed, buf.String())
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

func TestCompareOutput(t *testing.T) {
	base := thresholdResults()
	base.Scenario, base.Lock = "smoke", "simple"
	cur := clone(t, base)
	base.Stats.Throughput *= 3
	cur.Checks["mutex"] = checker.CheckResult{Verdict: "invalid"}
	c := metrics.Compare(base, cur, 0)
	if c.MaxRegression != metrics.DefaultMaxRegression {
		t.Errorf("max regression = %v, want the default", c.MaxRegression)
	}
	var txt, md bytes.Buffer
	if err := WriteCompareText(&txt, c); err != nil {
		t.Fatal(err)
	}
	if err := WriteCompareMarkdown(&md, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"REGRESSED", "throughput", "-66.7%", "mutex", "WORSE", "acquire.p99"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if !strings.Contains(md.String(), "| metric | baseline | current |") {
		t.Errorf("markdown has no table:\n%s", md.String())
	}
}
