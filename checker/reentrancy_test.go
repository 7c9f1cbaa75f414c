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

// Issue 40 (Redisson's RLock, 3 of 7 seeds): client 0's acquire wrote its
// key at 1 ms and client 0 was frozen inside the acquire for longer than
// the TTL; its key expired at 101 ms and client 1 acquired at 106 ms and
// re-entered at 161 ms, after client 0's acquire had returned ok late
// (151 ms), its belief going on until its refused release. Client 0's key
// was taken before client 1's: client 1 re-entered its own live key, and
// the overlap is the mutex check's. Ordered by the acks, client 0's hold
// began after client 1's and the re-entry was charged to client 1.
func TestReentryNotChargedToTheHolderOfALateAck(t *testing.T) {
	build := func(b *hb, pause bool) *hb {
		if pause {
			b.srv(1, "hincrby").srv(1, "expire")
			b.add(history.Event{T: 2 * ms, End: 150 * ms, Client: 0, Key: "k", Op: history.OpPause, Detail: history.PointInAcquire})
		} else {
			b.cmd(0, 1, []string{"EVALSHA", "sha", "1", recKey, "0:a"}, []string{"HINCRBY", recKey, "0:a", "1"}, []string{"PEXPIRE", recKey, "100"})
		}
		b.srv(101, "expired")
		b.acq(1, 104, 106, 0, history.OK, 1).srv(106, "hincrby").srv(106, "expire")
		if !pause {
			b.cmd(1, 105, []string{"EVALSHA", "sha", "1", recKey, "1:a"}, []string{"HINCRBY", recKey, "1:a", "1"}, []string{"PEXPIRE", recKey, "100"})
		}
		b.acq(0, 0, 151, 0, history.OK, 1)
		b.acq(1, 160, 161, 0, history.OK, 2).srv(161, "hincrby").srv(161, "expire")
		if !pause {
			b.cmd(1, 160, []string{"EVALSHA", "sha", "1", recKey, "1:a"}, []string{"HINCRBY", recKey, "1:a", "1"}, []string{"PEXPIRE", recKey, "100"})
		}
		b.rel(1, 170, 171, 1).rel(1, 172, 173, 0).srv(173, "del")
		b.add(history.Event{T: 200 * ms, End: 201 * ms, Client: 0, Key: "k", Op: history.OpRelease, Result: history.Fail, Err: "not the lock owner"})
		return b
	}
	for _, c := range []struct {
		name  string
		b     *hb
		cause string
	}{
		// Without a record the key-take is the freeze's start inside
		// the acquire (granted); with one, client 0's script's HINCRBY
		// at 1 ms.
		{"in-acquire pause", build(newHB(nil), true), CausePause},
		{"command record", build(recordHB(), false), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Check(c.b.ev, Options{})
			wantVerdicts(t, r, map[string]Verdict{CheckMutex: Invalid, CheckReentrancy: Valid})
			for _, v := range r.Violations {
				if v.Check == CheckMutex && c.cause != "" && v.Cause != c.cause {
					t.Errorf("mutex violation: cause %s, want %s: %s", v.Cause, c.cause, v.Explanation)
				}
			}
			streamedSame(t, c.b)
		})
	}
}

// A release that never reached the server (its context was cancelled)
// left client 0's level there; client 0's next acquire answered depth 2
// although it held nothing, and its release then left the key held at
// depth 1: the lock counted a level the client had released. An acquire
// that answers depth 1 there (the lock set the count back) is valid.
func TestReleasedLevelKept(t *testing.T) {
	b := newHB(nil)
	b.acq(0, 0, 1, 0, history.OK, 1).srv(1, "hincrby").srv(1, "expire")
	b.add(history.Event{T: 10 * ms, End: 10 * ms, Client: 0, Key: "k", Op: history.OpRelease, Result: history.Unknown, Err: "context canceled"})
	b.acq(0, 12, 13, 0, history.OK, 2).srv(13, "hincrby").srv(13, "expire")
	b.rel(0, 20, 21, 0).srv(21, "hincrby")
	r := Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckReentrancy: Invalid})
	var got []Violation
	for _, v := range r.Violations {
		if v.Check == CheckReentrancy {
			got = append(got, v)
		}
	}
	if len(got) != 1 || got[0].Cause != CauseReleasedLevelKept ||
		!strings.Contains(got[0].Explanation, "client 0 acquired k at 0.013 s holding no lease on it, and the lock answered depth 2: it counted 1 level(s) the client had released; its release of k at 0.010 s") {
		t.Errorf("want one %s naming the release before: %+v", CauseReleasedLevelKept, got)
	}
	for i := range b.ev {
		if b.ev[i].Op == history.OpAcquire && b.ev[i].Depth == 2 {
			b.ev[i].Depth = 1
		}
	}
	if v := Check(b.ev, Options{}).Checks[CheckReentrancy].Verdict; v == Invalid {
		t.Errorf("reentrancy %s with the count set back (depth 1)", v)
	}
}

// An acquire that answered failed (its call was interrupted) while its
// script took the key at the server, by the command record: client 0's
// next acquire found its own field there and answered depth 2 although it
// held nothing, and its release left the key held at depth 1. The cause
// names the failed acquire and the take; without the record it is the
// released-level story, and an acquire that answers depth 1 is valid.
func TestFailedAcquireLevelKept(t *testing.T) {
	build := func(depth int) *hb {
		acq := func(b *hb, at int64) {
			b.cmd(0, at, []string{"EVALSHA", "acq", "1", recKey, "tokA"}, []string{"HINCRBY", recKey, "tokA", "1"}, []string{"PEXPIRE", recKey, "100"})
		}
		b := recordHB()
		b.acq(0, 0, 1, 101, history.OK, 1)
		acq(b, 1)
		b.rel(0, 5, 6, 0).cmd(0, 5, []string{"EVALSHA", "rel", "1", recKey, "tokA"}, []string{"HINCRBY", recKey, "tokA", "-1"}, []string{"DEL", recKey})
		b.acq(0, 10, 14, 0, history.Fail, 0)
		acq(b, 12)
		b.acq(0, 20, 21, 121, history.OK, depth)
		acq(b, 21)
		b.rel(0, 30, 31, 0).cmd(0, 30, []string{"EVALSHA", "rel", "1", recKey, "tokA"}, []string{"HINCRBY", recKey, "tokA", "-1"})
		// The same kept level, answered by the next two acquires: told
		// once, counted.
		for _, at := range []int64{40, 60} {
			b.acq(0, at, at+1, at+101, history.OK, depth)
			acq(b, at+1)
			b.rel(0, at+10, at+11, 0).cmd(0, at+10, []string{"EVALSHA", "rel", "1", recKey, "tokA"}, []string{"HINCRBY", recKey, "tokA", "-1"})
		}
		return b
	}
	reent := func(r *Result) []Violation {
		var got []Violation
		for _, v := range r.Violations {
			if v.Check == CheckReentrancy {
				got = append(got, v)
			}
		}
		return got
	}
	got := reent(Check(build(2).ev, Options{}))
	if len(got) != 1 || got[0].Cause != CauseFailedAcquireKept ||
		!strings.Contains(got[0].Explanation, "its acquire of k at 0.010 s answered failed, yet its script's HINCRBY took the key at 0.012 s") {
		t.Errorf("want one %s naming the failed acquire: %+v", CauseFailedAcquireKept, got)
	}
	if n := Check(build(2).ev, Options{}).Checks[CheckReentrancy].Stats["same_kept_level"]; n != 2 {
		t.Errorf("same_kept_level %v, want the 2 later acquires at the same depth", n)
	}
	// A fresh hold between (the level finally freed) tells the next kept
	// level again.
	fresh := build(2)
	fresh.acq(0, 80, 81, 181, history.OK, 1)
	fresh.rel(0, 85, 86, 0)
	fresh.acq(0, 90, 91, 191, history.OK, 2)
	if got := reent(Check(fresh.ev, Options{})); len(got) != 2 {
		t.Errorf("after a fresh hold: %d reentrancy violations, want 2: %+v", len(got), got)
	}
	// Without the record: the same violation, told as a kept level.
	noRec := build(2)
	var ev []history.Event
	for _, e := range noRec.ev {
		if e.Op != history.OpCommand {
			ev = append(ev, e)
		}
	}
	ev[0].Meta = map[string]any{"ttl_ms": 100.0, "honours": true, "topology": "single", "resource": "counter"}
	if got := reent(Check(ev, Options{})); len(got) != 1 || got[0].Cause != CauseReleasedLevelKept {
		t.Errorf("without the record: want one %s: %+v", CauseReleasedLevelKept, got)
	}
	if v := Check(build(1).ev, Options{}).Checks[CheckReentrancy].Verdict; v == Invalid {
		t.Errorf("reentrancy %s with depth 1", v)
	}
}
