package checker

import (
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

func TestFencedRegisterKeepsResourceSafe(t *testing.T) {
	r := Check(gcPause(true).ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckMutex: Invalid, CheckResource: Valid, CheckFencing: Valid})
	// The same history where the resource let the stale token through.
	b := gcPause(true)
	for i := range b.ev {
		if b.ev[i].Op == history.OpWrite && b.ev[i].Client == 0 {
			b.ev[i].Result = history.OK
		}
	}
	r = Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckResource: Invalid, CheckFencing: Invalid})
}

func TestInventoryOversell(t *testing.T) {
	b := newHB(map[string]any{"resource": "inventory", "stock": 1.0})
	b.acq(0, 0, 1, 101, history.OK, 1).read(0, 2, 1)
	b.add(history.Event{T: 3 * ms, End: 300 * ms, Client: 0, Key: "k", Op: history.OpPause})
	b.acq(1, 50, 110, 210, history.OK, 1).read(1, 111, 1).write(1, 112, 113, 0, 0, true).rel(1, 115, 116, 0)
	b.write(0, 301, 302, 0, 0, true).rel(0, 303, 304, 0)
	r := Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckResource: Invalid})
	if got := r.Checks[CheckResource].Stats["oversold_units"]; got != int64(1) {
		t.Errorf("oversold_units = %v, want 1", got)
	}
}
