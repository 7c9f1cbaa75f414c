package checker

import (
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

func TestGCPauseIsCaughtWithCause(t *testing.T) {
	r := Check(gcPause(false).ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckMutex: Invalid, CheckResource: Invalid})
	var mv *Violation
	for i := range r.Violations {
		if r.Violations[i].Check == CheckMutex {
			mv = &r.Violations[i]
		}
	}
	if mv == nil {
		t.Fatal("no mutex violation listed")
	}
	if mv.Cause != CausePause || mv.Key != "k" || len(mv.Clients) != 2 || mv.Clients[0] != 0 || mv.Clients[1] != 1 {
		t.Errorf("violation %+v: want cause %s between clients 0 and 1 on k", mv, CausePause)
	}
	if !strings.Contains(mv.Explanation, "paused") || mv.AtMS != 110 {
		t.Errorf("explanation %q at %.1f ms: want the pause named, at 110 ms", mv.Explanation, mv.AtMS)
	}
}

// A client that honours its deadline and does not act after it believes
// only until the deadline: B's acquire after it is no violation.
func TestHonouredDeadlineEndsBelief(t *testing.T) {
	b := newHB(nil)
	b.acq(0, 0, 1, 101, history.OK, 1).read(0, 2, 0).write(0, 3, 4, 1, 0, true)
	b.add(history.Event{T: 5 * ms, End: 300 * ms, Client: 0, Key: "k", Op: history.OpPause, Detail: "before-release"})
	b.acq(1, 50, 110, 210, history.OK, 1).read(1, 111, 1).write(1, 112, 113, 2, 0, true).rel(1, 115, 116, 0)
	b.rel(0, 301, 302, 0)
	wantVerdicts(t, Check(b.ev, Options{}), map[string]Verdict{CheckMutex: Valid, CheckResource: Valid})
	// Clients that do not honour deadlines believe until they release.
	b.ev[0].Meta["honours"] = false
	wantVerdicts(t, Check(b.ev, Options{}), map[string]Verdict{CheckMutex: Invalid})
}

func TestUnknownAcquireStartsNoBelief(t *testing.T) {
	b := newHB(nil)
	b.acq(0, 0, 50, 0, history.Unknown, 1)
	b.cycle(1, 60, 1)
	wantVerdicts(t, Check(b.ev, Options{}), map[string]Verdict{CheckMutex: Valid, CheckResource: Valid})
}

// A lease that arrives already past its deadline (the client was frozen
// between the SET reply and Acquire's return) is no belief: a correct lock's
// client that then sees the deadline and never writes must not be flagged,
// while one that writes anyway still is.
func TestExpiredOnArrivalLeaseIsNoBelief(t *testing.T) {
	b := newHB(nil)
	b.cycle(0, 0, 1)
	// client 1: invoked at 20, frozen, ack at 200 with deadline 120.
	b.acq(1, 20, 200, 120, history.OK, 1)
	// client 2 took the expired key at 150 and holds it past 200.
	b.acq(2, 150, 151, 251, history.OK, 1).read(2, 152, 1).write(2, 230, 231, 2, 0, true).rel(2, 240, 241, 0)
	// client 1 checks its lease, finds it gone, reports the loss.
	b.add(history.Event{T: 210 * ms, Client: 1, Key: "k", Op: history.OpLost})
	r := Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckMutex: Valid, CheckResource: Valid})
	if got := r.Checks[CheckMutex].Stats["expired_on_arrival"]; got != 1 {
		t.Errorf("expired_on_arrival = %v, want 1", got)
	}

	// The same, but client 1 writes after all: its belief is real.
	b = newHB(nil)
	b.cycle(0, 0, 1)
	b.acq(1, 20, 200, 120, history.OK, 1)
	b.acq(2, 150, 151, 251, history.OK, 1).read(2, 152, 1).write(2, 230, 231, 2, 0, true).rel(2, 240, 241, 0)
	b.read(1, 201, 1).write(1, 205, 206, 2, 0, true).rel(1, 207, 208, 0)
	r = Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckMutex: Invalid})
}

// A lease with no deadline whose only loss signal is the lock's
// notification (rueidislock cancels its context): the belief ends when the
// lock told the holder (told-lost), as it would at a deadline, not when the
// holder next looked (lost). rueidislock's overlap read 613-620 ms where
// the library told its holder 171-179 ms after the other client acquired.
// What the holder did before it looked still counts.
func TestToldLostEndsABeliefWithoutDeadline(t *testing.T) {
	build := func(told int64, writeAt int64) *hb {
		b := newHB(nil)
		b.acq(0, 0, 1, 0, history.OK, 1).read(0, 2, 0)
		b.add(history.Event{T: told * ms, Client: 0, Key: "k", Op: history.OpTold})
		b.acq(1, 205, 210, 0, history.OK, 1).read(1, 211, 0).write(1, 212, 213, 1, 0, true)
		if writeAt > 0 {
			b.write(0, writeAt, writeAt+1, 1, 0, true)
		}
		b.add(history.Event{T: 400 * ms, Client: 0, Key: "k", Op: history.OpLost})
		return b.rel(1, 420, 421, 0)
	}
	// Told before the other's acquire returned: no overlap.
	r := Check(build(200, 0).ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckMutex: Valid})
	// Told 40 ms after it: an overlap of 40 ms, not of 190 ms to the look.
	r = Check(build(250, 0).ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckMutex: Invalid})
	if got := r.Checks[CheckMutex].Stats["overlap_ms"].(float64); got < 39 || got > 41 {
		t.Errorf("overlap %.1f ms, want 40 (to told-lost at 0.250 s)", got)
	}
	// Told in time, but the holder wrote before it looked: that counts.
	wantVerdicts(t, Check(build(200, 300).ev, Options{}), map[string]Verdict{CheckMutex: Invalid})
}
