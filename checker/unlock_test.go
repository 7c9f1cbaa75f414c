package checker

import (
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// expire-then-unlock with a plain DEL: A's release deletes B's key, C walks in.
func TestNonOwnerUnlock(t *testing.T) {
	b := newHB(nil)
	b.acq(0, 0, 1, 101, history.OK, 1).srv(1, "set").read(0, 2, 0).write(0, 3, 4, 1, 0, true)
	b.srv(101, "expired")
	b.acq(1, 90, 110, 210, history.OK, 1).srv(109, "set").read(1, 111, 1)
	b.rel(0, 150, 151, 0).srv(150, "del") // A's DEL removes B's key
	b.acq(2, 140, 155, 255, history.OK, 1).srv(154, "set")
	b.write(1, 170, 171, 2, 0, true).rel(1, 172, 173, 0)
	b.read(2, 174, 2).write(2, 175, 176, 3, 0, true).rel(2, 177, 178, 0).srv(177, "del")
	r := Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckUnlock: Invalid, CheckMutex: Invalid})
	found := false
	for _, v := range r.Violations {
		if v.Check == CheckUnlock {
			found = true
			if v.Clients[0] != 0 || v.Clients[1] != 1 {
				t.Errorf("unlock violation clients %v, want [0 1] (culprit, victim)", v.Clients)
			}
		}
		if v.Check == CheckMutex && v.Cause != CauseNonOwnerDel {
			t.Errorf("mutex violation cause %s, want %s", v.Cause, CauseNonOwnerDel)
		}
	}
	if !found {
		t.Fatal("no unlock violation listed")
	}
	// An owner-checked release is refused: no del, no violation.
	var ok []history.Event
	for _, e := range b.ev {
		if !(e.Op == history.OpServer && e.T == 150*ms) && !(e.Client == 2) {
			ok = append(ok, e)
		}
	}
	wantVerdicts(t, Check(ok, Options{}), map[string]Verdict{CheckUnlock: Valid, CheckMutex: Valid})
}

// A del is charged to a release that left depth > 0 only when no release
// that freed the key was in flight too: back-to-back nested and top-level
// releases (and another client's refused release) overlap within the
// observer's lag.
func TestDelChargedToFreeingRelease(t *testing.T) {
	base := func() *hb {
		b := newHB(map[string]any{"resource": "counter"})
		b.acq(0, 0, 1, 101, history.OK, 1).read(0, 2, 0).acq(0, 3, 4, 104, history.OK, 2).write(0, 5, 6, 1, 0, true)
		return b
	}
	// Nested release [7,8] leaves depth 1; the top release [8.5,9] frees
	// the key, its del observed at 9 — also within the nested one's lag.
	b := base()
	b.rel(0, 7, 8, 1).add(history.Event{T: 8*ms + ms/2, End: 9 * ms, Client: 0, Key: "k", Op: history.OpRelease, Result: history.OK})
	b.add(history.Event{T: 10 * ms, End: 12 * ms, Client: 1, Key: "k", Op: history.OpRelease, Depth: 1, Result: history.Fail, Err: "not the lock owner"})
	b.srv(11, "del")
	wantVerdicts(t, Check(b.ev, Options{ObserverLag: 5 * ms}), map[string]Verdict{CheckReentrancy: Valid})
	// A del while only the nested release was in flight freed it early.
	b = base()
	b.rel(0, 7, 8, 1).srv(8, "del").rel(0, 30, 31, 0)
	wantVerdicts(t, Check(b.ev, Options{ObserverLag: 5 * ms}), map[string]Verdict{CheckReentrancy: Invalid})
}

// A chain of plain-DEL releases: A's release deletes B's key; B, whose key
// is gone, then releases with a DEL that removes C's. Both are foreign
// unlocks: B's key was gone (deleted by A), not only expired.
func TestNonOwnerUnlockChain(t *testing.T) {
	b := newHB(nil)
	b.acq(0, 0, 1, 101, history.OK, 1).srv(1, "set").read(0, 2, 0).write(0, 3, 4, 1, 0, true)
	b.srv(101, "expired")
	b.acq(1, 90, 110, 210, history.OK, 1).srv(109, "set").read(1, 111, 1)
	b.rel(0, 150, 151, 0).srv(150, "del") // A's DEL removes B's key
	b.acq(2, 140, 155, 255, history.OK, 1).srv(154, "set").read(2, 156, 1)
	b.write(1, 170, 171, 2, 0, true).rel(1, 172, 173, 0).srv(172, "del") // B's DEL removes C's key
	b.write(2, 180, 181, 2, 0, true).rel(2, 182, 183, 0)
	r := Check(b.ev, Options{})
	if n := r.Checks[CheckUnlock].Violations; n != 2 {
		t.Fatalf("unlock violations %d, want 2 (A deleted B's key, then B deleted C's): %+v", n, r.Violations)
	}
}

// A renewal that SETs the key without an owner check, sent before the
// renewer's key expired and never answered, lands while another client
// holds the key: the unlock check blames that renewal
// (renewal-overwrote-owner). Answered in time, or with no renewal of
// another client to explain it, the same write is nobody's fault.
func TestLateBlindRenewalOverwritesOwner(t *testing.T) {
	build := func(renewEnd int64, res history.Result) *hb {
		b := newHB(nil)
		b.acq(0, 0, 1, 101, history.OK, 1).srv(1, "set").srv(1, "expire")
		b.add(history.Event{T: 30 * ms, End: renewEnd * ms, Client: 0, Key: "k", Op: history.OpRenew, Result: res})
		b.add(history.Event{T: 101 * ms, Client: 0, Key: "k", Op: history.OpLost})
		b.srv(101, "expired")
		b.acq(1, 90, 102, 202, history.OK, 1).srv(102, "set").srv(102, "expire")
		b.srv(130, "set").srv(130, "expire") // client 0's renewal lands
		b.rel(1, 180, 181, 0).srv(181, "del")
		return b
	}
	r := Check(build(80, history.Unknown).ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckUnlock: Invalid, CheckMutex: Valid})
	var found bool
	for _, v := range r.Violations {
		if v.Check == CheckUnlock && v.Cause == CauseRenewalOverwrote && len(v.Clients) == 2 && v.Clients[0] == 0 && v.Clients[1] == 1 && v.AtMS == 130 {
			found = true
		}
	}
	if !found {
		t.Errorf("no renewal-overwrote-owner violation by client 0 on client 1 at 130 ms: %+v", r.Violations)
	}
	// Answered at 31 ms: it was not on the wire at 130 ms.
	wantVerdicts(t, Check(build(31, history.OK).ev, Options{}), map[string]Verdict{CheckUnlock: Valid})
	// The owner's own renewal at that moment explains the write.
	b := build(80, history.Unknown)
	b.add(history.Event{T: 129 * ms, End: 131 * ms, Client: 1, Key: "k", Op: history.OpRenew, Result: history.OK})
	wantVerdicts(t, Check(b.ev, Options{}), map[string]Verdict{CheckUnlock: Valid})
}

// A PEXPIRE without an owner check by a client whose key had expired,
// landing on the next owner's key: extended-foreign-lock.
func TestForeignExtensionIsNamed(t *testing.T) {
	b := newHB(nil)
	b.acq(0, 0, 1, 101, history.OK, 1).srv(1, "set").srv(1, "expire")
	b.add(history.Event{T: 101 * ms, Client: 0, Key: "k", Op: history.OpLost})
	b.srv(101, "expired")
	b.acq(1, 90, 102, 202, history.OK, 1).srv(102, "set").srv(102, "expire")
	b.add(history.Event{T: 125 * ms, End: 130 * ms, Client: 0, Key: "k", Op: history.OpRenew, Result: history.OK})
	b.srv(130, "expire")
	b.rel(1, 180, 181, 0).srv(181, "del")
	r := Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckUnlock: Invalid})
	for _, v := range r.Violations {
		if v.Check == CheckUnlock && v.Cause != CauseExtendedForeign {
			t.Errorf("cause %s, want %s: %+v", v.Cause, CauseExtendedForeign, v)
		}
	}
}

// A holder cut off from the node right after its acquire returned wrote
// its key before the cut, though the write's notification arrives after
// the cut began (the observer's lag): the key is its own, and its expiry
// under the holder's belief is a loss. rueidislock's partitioned holder:
// loss detection counted 0 losses on 2 of 3 seeds.
func TestLossOfAKeyWrittenJustBeforeACut(t *testing.T) {
	b := newHB(nil)
	b.acq(0, 0, 5, 0, history.OK, 1).fault(1, history.FaultCutClient, "client 0", 5, 400, map[string]string{"mode": "drop"}, nil)
	b.srv(6, "set").srv(6, "expire").srv(105, "expired")
	b.acq(1, 50, 106, 0, history.OK, 1).srv(106, "set").rel(1, 120, 121, 0).srv(121, "del")
	b.rel(0, 300, 301, 0)
	r := Check(b.ev, Options{})
	if r.LossDetection == nil || r.LossDetection.Losses != 1 {
		t.Fatalf("loss detection %+v, want client 0's key expiring at 0.105 s as its one loss", r.LossDetection)
	}
}
