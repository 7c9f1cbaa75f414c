package checker

import (
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
	// A hash lock found its key gone and took it afresh at depth 1.
	for i := range b.ev {
		if b.ev[i].Op == history.OpAcquire && b.ev[i].Depth == 2 {
			b.ev[i].Depth = 1
		}
	}
	wantVerdicts(t, Check(b.ev, Options{}), map[string]Verdict{CheckReentrancy: Valid})
}
