package checker

import (
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// Issue 40: "client 2's clock was skewed, so it trusted its lease too
// long", for a lock that reports no lease and sets only server TTLs, under
// a constant offset. The skew explains an overlap only when the lock's
// lease arithmetic reads the skewed clock: it reports a deadline (counted
// on that clock), or the clock runs at another rate (its timers stretch).
func TestClockSkewNeedsTheLockToReadTheClock(t *testing.T) {
	for _, c := range []struct {
		name     string
		req      map[string]string
		deadline int64
		skew     bool
	}{
		{"offset, no deadline", map[string]string{history.ParamOffset: "300ms"}, 0, false},
		{"offset, a deadline", map[string]string{history.ParamOffset: "300ms"}, 111 * ms, true},
		{"rate, no deadline", map[string]string{history.ParamRate: "0.5"}, 0, true},
	} {
		m := causeModel(func(b *hb) { b.fault(1, history.FaultClockSkew, "client 1", 50, 300, c.req, nil).srv(111, "expired") })
		m.holds[0].deadline = c.deadline
		cause, expl := m.cause(0, 0, 1)
		if got := cause == CauseClockSkew; got != c.skew {
			t.Errorf("%s: cause %s (%s), want clock skew %v", c.name, cause, expl, c.skew)
		}
		if !c.skew && cause != CauseExpired {
			t.Errorf("%s: cause %s, want %s (the key's expiry at the server): %s", c.name, cause, CauseExpired, expl)
		}
	}
}

// Issue 40: a lease granted already past its deadline (a Redlock whose
// validity was counted from an earlier attempt) was named renewal-failed,
// its renewals refused because the key was gone. Client 0's acquire
// returned at 150 ms with validity to 120 ms; it renewed (refused) and
// wrote until 171 ms. Client 1 acquired at 160 ms (after it: the late
// lease is the earlier hold's, and was renewal-failed) or at 145 ms (before
// it: the late lease is the later hold's, and was unknown).
func TestExpiredOnArrivalBeforeRenewalFailed(t *testing.T) {
	for _, other := range []int64{160, 145} {
		b := newHB(nil)
		b.acq(0, 0, 150, 120, history.OK, 1).srv(1, "set").srv(101, "expired")
		b.acq(1, other-15, other, other+100, history.OK, 1).srv(other-1, "set").read(1, other+1, 0)
		b.add(history.Event{T: 152 * ms, End: 153 * ms, Client: 0, Key: "k", Op: history.OpRenew, Result: history.Fail})
		b.read(0, 154, 0).write(0, 170, 171, 1, 0, true).rel(0, 172, 173, 0)
		b.write(1, 180, 181, 1, 0, true).rel(1, 182, 183, 0)
		r := Check(b.ev, Options{})
		wantVerdicts(t, r, map[string]Verdict{CheckMutex: Invalid})
		n := 0
		for _, v := range r.Violations {
			if v.Check != CheckMutex {
				continue
			}
			n++
			if v.Cause != CauseExpiredOnArrival || !strings.Contains(v.Explanation, "its acquire returned at 0.150 s, its validity had ended at 0.120 s") {
				t.Errorf("client 1 at %d ms: mutex violation: cause %s, want %s: %s", other, v.Cause, CauseExpiredOnArrival, v.Explanation)
			}
		}
		if n == 0 {
			t.Fatalf("client 1 at %d ms: no mutex violation: %+v", other, r.Violations)
		}
	}
}

// Issue 40: "client 2's lease on k0 while it was paused (1.134 s–1.535
// s)": with no expiry in the server's record and no deadline the template
// left the lease's end out.
func TestPauseSentenceTellsTheLeasesEnd(t *testing.T) {
	m := causeModel(func(b *hb) { b.pause(1, 20, 200, history.PointBeforeRelease) })
	cause, expl := m.cause(0, 0, 1)
	if cause != CausePause || !strings.Contains(expl, "client 1's lease on k ran out (its TTL, 100 ms; no expiry of it in the server's record) while it was paused (0.020 s–0.200 s)") {
		t.Errorf("cause %s: %q", cause, expl)
	}
}
