package checker

import (
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// The sweep's false positive (sweep-pause-in-acquire / fenced, seed 1): a
// client frozen between the server's reply and its acquire's return comes
// back with token 1 after client 1 was granted token 2 and released. The
// grants' order is unknown (client 0's window contains client 1's), so
// token 1 after token 2 is the counter working, not going backwards.
// Granted after client 1's ack, token 1 would be a violation.
func TestFencingOrdersGrantsByTheirWindows(t *testing.T) {
	late := func(invoke int64) *hb {
		b := newHB(map[string]any{"resource": "register"})
		b.acq(1, invoke, invoke+1, invoke+101, history.OK, 1).read(1, invoke+2, 0).write(1, invoke+3, invoke+4, 1, 2, true).rel(1, invoke+5, invoke+6, 0)
		b.acq(0, 0, 300, 100, history.OK, 1).read(0, 301, 1)
		b.add(history.Event{T: 320 * ms, Client: 0, Key: "k", Op: history.OpLost})
		b.ev[1].Fence = 2
		b.ev[5].Fence = 1
		return b
	}
	r := Check(late(150).ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckFencing: Valid, CheckMutex: Valid})
	// Client 0's acquire invoked at 0, client 1's acked at 151 with token
	// 2; were client 0's acquire invoked after that, token 1 is backwards.
	b := late(150)
	b.ev[5].T, b.ev[5].End, b.ev[5].Deadline = 160*ms, 300*ms, 260*ms
	r = Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckFencing: Invalid})
}

// A write applied before a newer token's write but answered after it (its
// client frozen on the way back) is not a stale token getting through.
func TestFencedWritesOrderedByTheirWindows(t *testing.T) {
	b := newHB(map[string]any{"resource": "register"})
	b.acq(0, 0, 1, 101, history.OK, 1).read(0, 2, 0).write(0, 3, 400, 1, 1, true).rel(0, 401, 402, 0)
	b.acq(1, 150, 151, 251, history.OK, 1).read(1, 152, 1).write(1, 153, 154, 2, 2, true).rel(1, 155, 156, 0)
	b.ev[1].Fence, b.ev[5].Fence = 1, 2
	var stale int
	r := Check(b.ev, Options{})
	for _, v := range r.Violations {
		if v.Check == CheckFencing && strings.Contains(v.Explanation, "stale token") {
			stale++
		}
	}
	if stale != 0 {
		t.Errorf("%d stale-token violations for a write sent before the newer token's write was answered: %+v", stale, r.Violations)
	}
	// Sent after the token-2 write was answered, token 1 got through stale.
	b.ev[3].T = 160 * ms
	r = Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckFencing: Invalid})
}
