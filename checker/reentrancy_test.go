package checker

import (
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

func TestReentryAfterExpiry(t *testing.T) {
	b := newHB(map[string]any{"resource": "counter"})
	b.acq(0, 0, 1, 101, history.OK, 1).srv(1, "hset")
	b.add(history.Event{T: 2 * ms, End: 250 * ms, Client: 0, Key: "k", Op: history.OpPause, Detail: "after-acquire"})
	b.srv(101, "expired")
	b.acq(1, 50, 110, 210, history.OK, 1).srv(109, "hset").read(1, 111, 0)
	b.acq(0, 251, 252, 352, history.OK, 2) // a local count says yes
	b.write(1, 300, 301, 1, 0, true).rel(1, 302, 303, 0)
	r := Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckReentrancy: Invalid})
	// Client 1's hold began after client 0's: client 0 re-entered a key
	// that client 1 had taken.
	for _, v := range r.Violations {
		if v.Check == CheckReentrancy && (v.Cause != CauseLocalReentry || !strings.Contains(v.Explanation, "client 1 had held it since 0.110 s")) {
			t.Errorf("reentrancy violation: %s, %q", v.Cause, v.Explanation)
		}
	}
	// A hash lock found its key gone and took it afresh at depth 1.
	for i := range b.ev {
		if b.ev[i].Op == history.OpAcquire && b.ev[i].Depth == 2 {
			b.ev[i].Depth = 1
		}
	}
	wantVerdicts(t, Check(b.ev, Options{}), map[string]Verdict{CheckReentrancy: Valid})
}

// explore-redisson-2's shape (docs/drivers.md): client 0 is paused before
// its release, its key expires at 101 ms and client 1's acquire takes the
// key at 102 ms, then re-enters it twice at the server while client 0,
// still paused, believes on until its refused release at 131 ms. The
// overlap is the mutex check's (expired-during-pause); client 1's
// re-entries went into its own live key, so reentrancy holds: client 0's
// stale belief, begun before client 1's hold, is not a re-entry into a
// lock that was no longer client 1's.
func TestReentryIntoOwnKeyWhileAnExpiredHolderBelieves(t *testing.T) {
	b := newHB(nil)
	b.acq(0, 0, 1, 0, history.OK, 1).srv(1, "hincrby").srv(1, "expire")
	b.add(history.Event{T: 2 * ms, End: 130 * ms, Client: 0, Key: "k", Op: history.OpPause, Detail: "before-release"})
	b.srv(101, "expired").srv(101, "hincrby").srv(101, "expire")
	b.acq(1, 50, 102, 0, history.OK, 1).read(1, 103, 0)
	b.acq(1, 104, 105, 0, history.OK, 2).srv(105, "hincrby").srv(105, "expire")
	b.acq(1, 106, 107, 0, history.OK, 3).srv(107, "hincrby").srv(107, "expire")
	b.write(1, 108, 109, 1, 0, true)
	b.rel(1, 110, 111, 2).srv(111, "hincrby").rel(1, 112, 113, 1).srv(113, "hincrby")
	b.rel(1, 114, 115, 0).srv(115, "hincrby").srv(115, "del")
	b.add(history.Event{T: 130 * ms, End: 131 * ms, Client: 0, Key: "k", Op: history.OpRelease, Result: history.Fail, Err: "not the lock owner"})
	r := Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckMutex: Invalid, CheckReentrancy: Valid})
	for _, v := range r.Violations {
		if v.Check == CheckMutex && v.Cause != CausePause {
			t.Errorf("mutex violation: cause %s, want %s: %s", v.Cause, CausePause, v.Explanation)
		}
	}
	streamedSame(t, b)
}
