package checker

import (
	"strings"
	"testing"
)

// In a history merged from workers, an overlap shorter than the two
// clients' combined clock uncertainty is not evidence: mutex is unknown,
// never invalid, and says why. A longer overlap stays invalid, and two
// clients of one worker share a clock, so between them any overlap counts.
func TestOverlapWithinClockUncertainty(t *testing.T) {
	// Client a holds from 1 ms until it invokes its release at 20 ms;
	// client b's acquire is acked at 19 ms: 1 ms of overlap.
	history := func(uncMS float64, a, b int) *Result {
		meta := map[string]any{
			"clock_uncertainty_ns": map[string]any{"0": uncMS * 1e6, "1": uncMS * 1e6, "2": uncMS * 1e6},
			"client_worker":        map[string]any{"0": 0.0, "1": 1.0, "2": 0.0},
		}
		h := newHB(meta).acq(a, 0, 1, 0, "ok", 1).read(a, 2, 0).write(a, 5, 6, 1, 0, true).rel(a, 20, 21, 0).
			acq(b, 10, 19, 0, "ok", 1).read(b, 22, 1).write(b, 23, 24, 2, 0, true).rel(b, 25, 26, 0)
		return Check(h.ev, Options{})
	}
	cases := []struct {
		name  string
		unc   float64
		a, b  int
		want  Verdict
		noted bool
	}{
		{"two workers, 1 ms overlap, 0.6 ms each", 0.6, 0, 1, Unknown, true},
		{"two workers, 1 ms overlap, 0.4 ms each", 0.4, 0, 1, Invalid, false},
		{"one worker, 1 ms overlap, 0.6 ms each", 0.6, 0, 2, Invalid, false},
		{"a single process's history", 0, 0, 1, Invalid, false},
	}
	for _, tc := range cases {
		r := history(tc.unc, tc.a, tc.b)
		mx := r.Checks[CheckMutex]
		if mx.Verdict != tc.want {
			t.Errorf("%s: mutex %s (%d violations), want %s", tc.name, mx.Verdict, mx.Violations, tc.want)
		}
		noted := strings.Contains(strings.Join(mx.Notes, "\n"), "clock uncertainty")
		if noted != tc.noted {
			t.Errorf("%s: notes %q: uncertainty noted %v, want %v", tc.name, mx.Notes, noted, tc.noted)
		}
	}
}

// A lost update whose read preceded the other client's write by less than
// the combined uncertainty may be an artefact of the clocks: unknown.
func TestInterleavingWithinClockUncertainty(t *testing.T) {
	check := func(uncMS float64) Verdict {
		meta := map[string]any{"clock_uncertainty_ns": map[string]any{"0": uncMS * 1e6, "1": uncMS * 1e6},
			"client_worker": map[string]any{"0": 0.0, "1": 1.0}}
		// b reads at 5 ms; a's write is applied at 6 ms; b writes at 8 ms
		// from its stale read: a lost update, 1 ms from read to a's write.
		h := newHB(meta).acq(0, 0, 1, 0, "ok", 1).read(0, 2, 0).write(0, 5, 6, 1, 0, true).rel(0, 9, 10, 0).
			acq(1, 0, 4, 0, "ok", 1).read(1, 5, 0).write(1, 7, 8, 1, 0, true).rel(1, 11, 12, 0)
		return Check(h.ev, Options{}).Checks[CheckResource].Verdict
	}
	if v := check(0.6); v != Unknown {
		t.Errorf("1 ms interleaving within 1.2 ms of uncertainty: resource %s, want unknown", v)
	}
	if v := check(0.2); v != Invalid {
		t.Errorf("1 ms interleaving with 0.4 ms of uncertainty: resource %s, want invalid", v)
	}
}
