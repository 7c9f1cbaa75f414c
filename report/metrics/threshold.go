package metrics

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
)

// Threshold is one parsed k6-style threshold: `<metric> <op> <value>`.
//
// Metrics (all read from results.json):
//
//	throughput                       cycles per second of workload
//	cycles, workload_cycles          completed cycles
//	fairness                         Jain's index, 0..1
//	violations                       number of violations
//	events                           history events
//	<op>.<stat>                      latency: op = acquire|release|cycle|handoff,
//	                                 stat = p50|p90|p99|p999 (also p99.9, p(99))|max|mean|count
//	acquires.<r>, releases.<r>       counts: r = ok|fail|unknown
//	server.commands_per_cycle, server.usec_per_cycle
//	loss_detect.p50|p99|max          how long holders believed after the server lost
//	                                 their key (latency; +Inf when one never learned)
//	loss_detect.losses|learned|released|unbounded|never_learned  counts
//	checks.<name>, verdict, outcome  compared as text: == or != only
//
// Latency values take a unit, ns, us, µs, ms or s, and are compared in
// microseconds; a latency value without a unit is in microseconds.
type Threshold struct {
	Expr   string
	Metric string
	Op     string // < <= > >= == !=
	// Value is the right-hand side (µs for latencies) when numeric.
	Value float64
	// Text is the right-hand side when the metric is a verdict.
	Text string
}

var thresholdOps = []string{"<=", ">=", "==", "!=", "<", ">"} // longest first

var latencyStats = map[string]string{
	"p50": "p50", "p(50)": "p50", "med": "p50", "median": "p50",
	"p90": "p90", "p(90)": "p90",
	"p99": "p99", "p(99)": "p99",
	"p999": "p999", "p99.9": "p999", "p(99.9)": "p999",
	"max": "max", "mean": "mean", "avg": "mean", "count": "count",
}

var verdictWords = map[string]bool{"valid": true, "invalid": true, "unknown": true}

// ParseThreshold parses one threshold expression. The error names the
// expression and what is wrong with it.
func ParseThreshold(expr string) (Threshold, error) {
	t := Threshold{Expr: expr}
	bad := func(format string, a ...any) (Threshold, error) {
		return t, fmt.Errorf("threshold %q: %s", expr, fmt.Sprintf(format, a...))
	}
	s := strings.TrimSpace(expr)
	if s == "" {
		return bad("empty expression (want e.g. 'acquire.p99 < 5ms')")
	}
	at, op := -1, ""
	for i := 0; i < len(s) && at < 0; i++ {
		for _, o := range thresholdOps {
			if strings.HasPrefix(s[i:], o) {
				at, op = i, o
				break
			}
		}
	}
	if at < 0 {
		if strings.Contains(s, "=") {
			return bad("no comparison operator (use == for equality; operators: < <= > >= == !=)")
		}
		return bad("no comparison operator (want <metric> <op> <value>, op one of < <= > >= == !=)")
	}
	t.Metric = strings.ToLower(strings.TrimSpace(s[:at]))
	t.Op = op
	rhs := strings.TrimSpace(s[at+len(op):])
	if t.Metric == "" {
		return bad("no metric before %q", op)
	}
	if rhs == "" {
		return bad("no value after %q", op)
	}
	if strings.ContainsAny(rhs, "<>=!") {
		return bad("more than one comparison operator")
	}
	kind, err := metricKind(t.Metric)
	if err != nil {
		return bad("%v", err)
	}
	switch kind {
	case kindVerdict:
		if op != "==" && op != "!=" {
			return bad("%s is a verdict: compare it with == or !=, not %s", t.Metric, op)
		}
		t.Text = strings.ToLower(rhs)
		if t.Metric != "outcome" && !verdictWords[t.Text] {
			return bad("%q is not a verdict (want valid, invalid or unknown)", rhs)
		}
	case kindLatency:
		v, err := parseDurationUS(rhs)
		if err != nil {
			return bad("%v", err)
		}
		t.Value = v
		if strings.HasSuffix(t.Metric, ".count") {
			if _, perr := strconv.ParseFloat(rhs, 64); perr != nil {
				return bad("%s is a count: %q must be a plain number", t.Metric, rhs)
			}
		}
	default:
		v, err := strconv.ParseFloat(rhs, 64)
		if err != nil {
			if _, derr := parseDurationUS(rhs); derr == nil {
				return bad("%s is not a latency: %q must be a plain number, without a unit", t.Metric, rhs)
			}
			return bad("%q is not a number", rhs)
		}
		t.Value = v
	}
	return t, nil
}

type metricKindT int

const (
	kindNumber metricKindT = iota
	kindLatency
	kindVerdict
)

func metricKind(m string) (metricKindT, error) {
	switch m {
	case "throughput", "cycles", "workload_cycles", "fairness", "violations", "events",
		"server.commands_per_cycle", "server.usec_per_cycle":
		return kindNumber, nil
	case "verdict", "outcome":
		return kindVerdict, nil
	}
	head, tail, ok := strings.Cut(m, ".")
	if !ok {
		return 0, fmt.Errorf("unknown metric %q (want throughput, fairness, violations, cycles, <op>.<stat>, acquires.fail, checks.<name>, ...)", m)
	}
	switch head {
	case "loss_detect":
		switch tail {
		case "p50", "p99", "max":
			return kindLatency, nil
		case "losses", "learned", "released", "unbounded", "never_learned":
			return kindNumber, nil
		}
		return 0, fmt.Errorf("unknown metric %q (loss_detect.p50|p99|max, or loss_detect.losses|learned|released|unbounded|never_learned)", m)
	case "checks":
		if tail == "" {
			return 0, errors.New("checks. needs a check name (e.g. checks.mutex)")
		}
		return kindVerdict, nil
	case "acquires", "releases":
		switch tail {
		case "ok", "fail", "unknown":
			return kindNumber, nil
		}
		return 0, fmt.Errorf("unknown count %q (want %s.ok, %s.fail or %s.unknown)", m, head, head, head)
	case OpAcquire, OpRelease, OpCycle, OpHandoff:
		if _, ok := latencyStats[tail]; !ok {
			return 0, fmt.Errorf("unknown latency statistic %q in %q (want p50, p90, p99, p999, max, mean or count)", tail, m)
		}
		return kindLatency, nil // .count is checked to be a plain number by the caller
	}
	return 0, fmt.Errorf("unknown metric %q (want throughput, fairness, violations, cycles, <op>.<stat> with op acquire|release|cycle|handoff, acquires.fail, checks.<name>, ...)", m)
}

// parseDurationUS parses "5ms", "800us", "1.5s", "250" (µs) into µs.
func parseDurationUS(s string) (float64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		us     float64
	}{{"ns", 1e-3}, {"us", 1}, {"µs", 1}, {"μs", 1}, {"ms", 1e3}, {"s", 1e6}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			if err != nil {
				return 0, fmt.Errorf("%q is not a duration (want a number with ns, us, µs, ms or s)", s)
			}
			return v * u.us, nil
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (want a number with ns, us, µs, ms or s)", s)
	}
	return v, nil
}

// EvalThresholds parses and evaluates each expression against r. A bad
// expression, or a metric the run did not measure (no handoffs, no such
// check), fails with Error set rather than passing silently.
func EvalThresholds(exprs []string, r *Results) []ThresholdResult {
	var out []ThresholdResult
	for _, e := range exprs {
		t, err := ParseThreshold(e)
		if err != nil {
			out = append(out, ThresholdResult{Expr: e, Error: err.Error()})
			continue
		}
		out = append(out, t.Eval(r))
	}
	return out
}

// Eval evaluates t against r.
func (t Threshold) Eval(r *Results) ThresholdResult {
	res := ThresholdResult{Expr: t.Expr}
	kind, _ := metricKind(t.Metric)
	if kind == kindVerdict {
		got, err := verdictMetric(t.Metric, r)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		res.Actual = got
		res.Passed = (got == t.Text) == (t.Op == "==")
		return res
	}
	v, err := numberMetric(t.Metric, r)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Value = v
	res.Passed = compare(v, t.Op, t.Value)
	if kind == kindLatency && !strings.HasSuffix(t.Metric, ".count") {
		res.Actual = FormatUS(v)
	}
	return res
}

func compare(a float64, op string, b float64) bool {
	switch op {
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	case ">=":
		return a >= b
	case "==":
		return a == b
	case "!=":
		return a != b
	}
	return false
}

func verdictMetric(m string, r *Results) (string, error) {
	switch m {
	case "verdict":
		return r.Verdict, nil
	case "outcome":
		return r.Outcome, nil
	}
	name := strings.TrimPrefix(m, "checks.")
	c, ok := r.Checks[name]
	if !ok {
		names := make([]string, 0, len(r.Checks))
		for n := range r.Checks {
			names = append(names, n)
		}
		sort.Strings(names)
		return "", fmt.Errorf("no check named %q in the results (have: %s)", name, strings.Join(names, ", "))
	}
	return string(c.Verdict), nil
}

// plainMetrics are the numeric metrics named in full.
var plainMetrics = map[string]func(r *Results) (float64, error){
	"throughput":      func(r *Results) (float64, error) { return r.Stats.Throughput, nil },
	"cycles":          func(r *Results) (float64, error) { return float64(r.Stats.Cycles), nil },
	"workload_cycles": func(r *Results) (float64, error) { return float64(r.Stats.WorkloadCycles), nil },
	"fairness":        func(r *Results) (float64, error) { return r.Stats.Fairness, nil },
	"violations":      func(r *Results) (float64, error) { return float64(len(r.Violations)), nil },
	"events":          func(r *Results) (float64, error) { return float64(r.Events), nil },
	"server.commands_per_cycle": func(r *Results) (float64, error) {
		return serverCost(r, func(s *ServerCost) float64 { return s.CommandsPerCycle })
	},
	"server.usec_per_cycle": func(r *Results) (float64, error) {
		return serverCost(r, func(s *ServerCost) float64 { return s.UsecPerCycle })
	},
}

func serverCost(r *Results, f func(*ServerCost) float64) (float64, error) {
	if r.Stats.Server == nil {
		return 0, errors.New("the run did not measure the server's cost")
	}
	return f(r.Stats.Server), nil
}

func numberMetric(m string, r *Results) (float64, error) {
	if f, ok := plainMetrics[m]; ok {
		return f(r)
	}
	head, tail, _ := strings.Cut(m, ".")
	switch head {
	case "loss_detect":
		return lossDetectMetric(tail, r.LossDetection)
	case "acquires", "releases":
		c := r.Stats.Acquires
		if head == "releases" {
			c = r.Stats.Releases
		}
		switch tail {
		case "ok":
			return float64(c.OK), nil
		case "fail":
			return float64(c.Fail), nil
		default:
			return float64(c.Unknown), nil
		}
	}
	return latencyMetric(head, tail, r.Stats.LatencyUS[head])
}

// lossDetectMetric is loss_detect.<tail>: a count, or how long holders
// believed after the server lost their key (µs).
func lossDetectMetric(tail string, ld *checker.LossDetection) (float64, error) {
	if ld == nil {
		return 0, errors.New("the run did not measure loss detection (single and sentinel topologies with keyspace notifications only)")
	}
	switch tail {
	case "losses":
		return float64(ld.Losses), nil
	case "learned":
		return float64(ld.Learned), nil
	case "released":
		return float64(ld.Released), nil
	case "unbounded":
		return float64(ld.Unbounded), nil
	case "never_learned":
		return float64(ld.Released + ld.Unbounded), nil
	}
	if ld.Unbounded > 0 {
		return math.Inf(1), nil // a holder that never learned: unbounded
	}
	if ld.Learned+ld.Released == 0 {
		return 0, nil // nothing was lost while believed
	}
	switch tail {
	case "p50":
		return ld.P50MS * 1000, nil
	case "p99":
		return ld.P99MS * 1000, nil
	}
	return ld.MaxMS * 1000, nil
}

// latencyMetric is <op>.<stat> of op's latencies l (µs), or their count.
func latencyMetric(op, stat string, l Latency) (float64, error) {
	stat = latencyStats[stat]
	if stat == "count" {
		return float64(l.Count), nil
	}
	if l.Count == 0 {
		return 0, fmt.Errorf("no %s latencies were recorded", op)
	}
	switch stat {
	case "p50":
		return l.P50, nil
	case "p90":
		return l.P90, nil
	case "p99":
		return l.P99, nil
	case "p999":
		return l.P999, nil
	case "max":
		return l.Max, nil
	default:
		return l.Mean, nil
	}
}
