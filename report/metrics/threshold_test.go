package metrics

import (
	"path/filepath"
	"strings"
	"testing"
)

// thresholdResults is testdata/results.json: a run's results with checks,
// violations, counts and latencies (report's tests read it too).
func thresholdResults(t testing.TB) *Results {
	t.Helper()
	r, err := ReadResults(filepath.Join("testdata", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseThreshold(t *testing.T) {
	tests := []struct {
		expr   string
		metric string
		op     string
		value  float64
		text   string
	}{
		{"throughput > 5000", "throughput", ">", 5000, ""},
		{"acquire.p99 < 5ms", "acquire.p99", "<", 5000, ""},
		{"acquire.p99<5ms", "acquire.p99", "<", 5000, ""},
		{"cycle.p50 <= 800us", "cycle.p50", "<=", 800, ""},
		{"cycle.p50 <= 800µs", "cycle.p50", "<=", 800, ""},
		{"handoff.max < 50ms", "handoff.max", "<", 50000, ""},
		{"acquire.p(99.9) < 1s", "acquire.p(99.9)", "<", 1e6, ""},
		{"release.p90 < 1500ns", "release.p90", "<", 1.5, ""},
		{"release.max < 250", "release.max", "<", 250, ""},
		{"violations == 0", "violations", "==", 0, ""},
		{"fairness >= 0.9", "fairness", ">=", 0.9, ""},
		{"acquires.fail < 10", "acquires.fail", "<", 10, ""},
		{"checks.mutex == valid", "checks.mutex", "==", 0, "valid"},
		{"checks.fencing != invalid", "checks.fencing", "!=", 0, "invalid"},
		{"  Throughput   >=  1e3 ", "throughput", ">=", 1000, ""},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			th, err := ParseThreshold(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			if th.Metric != tc.metric || th.Op != tc.op || th.Value != tc.value || th.Text != tc.text {
				t.Errorf("got %+v", th)
			}
		})
	}
}

func TestParseThresholdErrors(t *testing.T) {
	tests := []struct {
		expr string
		want string // in the error
	}{
		{"", "empty"},
		{"throughput 5000", "no comparison operator"},
		{"throughput = 5000", "use =="},
		{"< 5000", "no metric"},
		{"throughput >", "no value"},
		{"latency.p99 < 5ms", `unknown metric "latency.p99"`},
		{"speed > 3", `unknown metric "speed"`},
		{"acquire.p98 < 5ms", `unknown latency statistic "p98"`},
		{"acquire.p99 < 5 parsecs", "not a duration"},
		{"acquire.p99 < fast", "not a duration"},
		{"throughput > 5ms", "not a latency"},
		{"throughput > lots", "not a number"},
		{"checks.mutex < valid", "== or !="},
		{"checks.mutex == fine", "not a verdict"},
		{"checks. == valid", "needs a check name"},
		{"acquires.maybe < 3", "unknown count"},
		{"acquire.count > 5ms", "plain number"},
		{"1 < throughput < 5", "more than one"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			_, err := ParseThreshold(tc.expr)
			if err == nil {
				t.Fatalf("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error %q does not say %q", msg, tc.want)
			}
			if !strings.Contains(msg, `"`+tc.expr+`"`) {
				t.Errorf("error %q does not name the expression", msg)
			}
		})
	}
}

func TestEvalThresholds(t *testing.T) {
	r := thresholdResults(t)
	tests := []struct {
		expr   string
		passed bool
		value  float64
		errHas string
	}{
		{"throughput > 5000", true, 6000, ""},
		{"throughput > 7000", false, 6000, ""},
		{"acquire.p99 < 5ms", true, 4000, ""},
		{"acquire.p99 < 4ms", false, 4000, ""},
		{"acquire.p99 <= 4ms", true, 4000, ""},
		{"cycle.p50 <= 800us", true, 800, ""},
		{"acquire.p999 < 10ms", true, 9000, ""},
		{"acquire.mean < 1ms", true, 900, ""},
		{"acquire.count >= 600", true, 600, ""},
		{"violations == 0", false, 2, ""},
		{"fairness >= 0.9", true, 0.95, ""},
		{"acquires.fail < 10", true, 7, ""},
		{"acquires.unknown == 0", false, 1, ""},
		{"releases.ok == 600", true, 600, ""},
		{"cycles != 0", true, 600, ""},
		{"checks.mutex == valid", true, 0, ""},
		{"checks.fencing == valid", false, 0, ""},
		{"checks.fencing != valid", true, 0, ""},
		{"verdict == valid", true, 0, ""},
		{"checks.reentrancy == valid", false, 0, `no check named "reentrancy"`},
		{"handoff.max < 50ms", false, 0, "no handoff latencies"},
		{"server.usec_per_cycle < 100", false, 0, "did not measure"},
		{"bogus > 1", false, 0, "unknown metric"},
	}
	var exprs []string
	for _, tc := range tests {
		exprs = append(exprs, tc.expr)
	}
	got := EvalThresholds(exprs, r)
	if len(got) != len(tests) {
		t.Fatalf("got %d results for %d expressions", len(got), len(tests))
	}
	for i, tc := range tests {
		g := got[i]
		if g.Expr != tc.expr || g.Passed != tc.passed || g.Value != tc.value {
			t.Errorf("%s: got %+v, want passed=%v value=%v", tc.expr, g, tc.passed, tc.value)
		}
		if (g.Error != "") != (tc.errHas != "") || !strings.Contains(g.Error, tc.errHas) {
			t.Errorf("%s: error %q, want one saying %q", tc.expr, g.Error, tc.errHas)
		}
	}
	if got[2].Actual != "4ms" || got[15].Actual != "valid" {
		t.Errorf("actual values: %q, %q", got[2].Actual, got[15].Actual)
	}
}

func TestFormatUS(t *testing.T) {
	for _, tc := range []struct {
		us   float64
		want string
	}{
		{0, "0"}, {0.5, "0.5µs"}, {12.345, "12.3µs"}, {850, "850µs"}, {1000, "1ms"}, {1250, "1.25ms"},
		{99999, "100ms"}, {2.5e6, "2.5s"}, {60e6, "60s"},
	} {
		if got := FormatUS(tc.us); got != tc.want {
			t.Errorf("FormatUS(%v) = %q, want %q", tc.us, got, tc.want)
		}
	}
}
