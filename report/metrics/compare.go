package metrics

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// DefaultMaxRegression is the relative change Compare tolerates by default:
// 10% less throughput or fairness, 10% more latency.
const DefaultMaxRegression = 0.10

// MinLatencyDeltaUS is the absolute latency change (µs) below which a
// latency is never called a regression, whatever the relative change: a
// p50 going from 40µs to 55µs is +37% but within scheduler noise on a
// loaded CI machine.
const MinLatencyDeltaUS = 20.0

// Comparison is a run compared against a baseline.
type Comparison struct {
	Base, Cur     string // "scenario/lock (seed N)"
	MaxRegression float64
	Metrics       []MetricChange
	Verdicts      []VerdictChange
	// Regressed is true when any metric regressed beyond MaxRegression or
	// any verdict got worse.
	Regressed bool
	Notes     []string
}

// MetricChange is one metric in both runs.
type MetricChange struct {
	Name string
	// Unit is "us" for latencies, "/s" for throughput, "" otherwise.
	Unit      string
	Base, Cur float64
	// Change is (Cur-Base)/Base; 0 when Base is 0.
	Change float64
	// HigherIsBetter: throughput and fairness; latencies are lower-is-better.
	HigherIsBetter bool
	Regressed      bool
}

// VerdictChange is one check's (or the overall) verdict in both runs.
type VerdictChange struct {
	Check     string // "verdict" for the overall verdict
	Base, Cur string
	// Worse: valid → unknown/invalid, unknown → invalid.
	Worse bool
}

func verdictRank(v string) int {
	switch v {
	case "valid":
		return 0
	case "", "n/a":
		return -1
	case "unknown":
		return 1
	default:
		return 2 // invalid, error
	}
}

// Compare compares cur against base. maxRegression is the tolerated relative
// change (0.10 = 10%); 0 means DefaultMaxRegression. Latency changes smaller
// than MinLatencyDeltaUS are never regressions. Metrics missing from either
// run (no hand-offs, say) are skipped with a note.
func Compare(base, cur *Results, maxRegression float64) *Comparison {
	if maxRegression <= 0 {
		maxRegression = DefaultMaxRegression
	}
	c := &Comparison{Base: runName(base), Cur: runName(cur), MaxRegression: maxRegression}
	if base.Scenario != cur.Scenario || base.Lock != cur.Lock {
		c.Notes = append(c.Notes, fmt.Sprintf("comparing different runs: %s vs %s", c.Base, c.Cur))
	}
	c.compareMetrics(base.Stats, cur.Stats)
	c.compareVerdicts(base, cur)
	return c
}

// addMetric judges m against c.MaxRegression and adds it.
func (c *Comparison) addMetric(m MetricChange) {
	if m.Base != 0 {
		m.Change = (m.Cur - m.Base) / m.Base
	}
	switch {
	case m.HigherIsBetter:
		m.Regressed = m.Cur < m.Base*(1-c.MaxRegression)
	default:
		m.Regressed = m.Cur > m.Base*(1+c.MaxRegression) && m.Cur-m.Base >= MinLatencyDeltaUS
	}
	c.Regressed = c.Regressed || m.Regressed
	c.Metrics = append(c.Metrics, m)
}

// compareMetrics compares throughput, each op's latency percentiles and
// fairness.
func (c *Comparison) compareMetrics(base, cur Stats) {
	if base.Throughput > 0 {
		c.addMetric(MetricChange{Name: "throughput", Unit: "/s", Base: base.Throughput, Cur: cur.Throughput, HigherIsBetter: true})
	} else {
		c.Notes = append(c.Notes, "throughput: the baseline has none; not compared")
	}
	for _, op := range Ops {
		b, bok := base.LatencyUS[op]
		k, kok := cur.LatencyUS[op]
		if !bok || !kok || b.Count == 0 || k.Count == 0 {
			if b.Count > 0 || k.Count > 0 {
				c.Notes = append(c.Notes, fmt.Sprintf("%s latency: recorded in only one of the runs (%d vs %d); not compared", op, b.Count, k.Count))
			}
			continue
		}
		for _, s := range []struct {
			name string
			b, k float64
		}{{"p50", b.P50, k.P50}, {"p99", b.P99, k.P99}, {"p999", b.P999, k.P999}} {
			c.addMetric(MetricChange{Name: op + "." + s.name, Unit: "us", Base: s.b, Cur: s.k})
		}
	}
	if base.Fairness > 0 {
		c.addMetric(MetricChange{Name: "fairness", Base: base.Fairness, Cur: cur.Fairness, HigherIsBetter: true})
	}
}

// addVerdict compares one verdict of the two runs and adds it.
func (c *Comparison) addVerdict(name, b, k string) {
	v := VerdictChange{Check: name, Base: b, Cur: k}
	bb := verdictRank(b)
	if bb < 0 {
		bb = 0 // a check the baseline did not have: it must be valid now
	}
	v.Worse = verdictRank(k) > bb
	c.Regressed = c.Regressed || v.Worse
	c.Verdicts = append(c.Verdicts, v)
}

// compareVerdicts compares the overall verdict and every check's, in
// order of name.
func (c *Comparison) compareVerdicts(base, cur *Results) {
	c.addVerdict("verdict", base.Verdict, cur.Verdict)
	names := map[string]bool{}
	for n := range base.Checks {
		names[n] = true
	}
	for n := range cur.Checks {
		names[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		b, bok := base.Checks[n]
		k, kok := cur.Checks[n]
		switch {
		case !kok:
			c.Notes = append(c.Notes, fmt.Sprintf("check %s: in the baseline only", n))
			continue
		case !bok:
			c.Notes = append(c.Notes, fmt.Sprintf("check %s: not in the baseline", n))
		}
		c.addVerdict(n, string(b.Verdict), string(k.Verdict))
	}
}

func runName(r *Results) string {
	s := r.Scenario + "/" + r.Lock
	if r.Seed != 0 {
		s += fmt.Sprintf(" (seed %d)", r.Seed)
	}
	return s
}

// Status says how the metric changed: same, better, worse (within
// tolerance) or REGRESSED.
func (m MetricChange) Status() string {
	if m.Regressed {
		return "REGRESSED"
	}
	better := m.Cur > m.Base
	if !m.HigherIsBetter {
		better = m.Cur < m.Base
	}
	if math.Abs(m.Change) < 0.01 || m.Cur == m.Base {
		return "same"
	}
	if better {
		return "better"
	}
	return "worse (within tolerance)"
}

// Status says how the verdict changed: same, better, changed or WORSE.
func (v VerdictChange) Status() string {
	switch {
	case v.Worse:
		return "WORSE"
	case v.Base == v.Cur:
		return "same"
	case verdictRank(v.Cur) < verdictRank(v.Base):
		return "better"
	}
	return "changed"
}
