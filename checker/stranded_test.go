package checker

import (
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// A stranded key: present at the server after every lease on it ended,
// past TTL + ε, blocking everyone while nobody holds it (issue 41). It is
// flagged with its cause whether or not a client waited for it, and a key
// that left the server within its TTL is not.
func TestStrandedKeys(t *testing.T) {
	end := func(b *hb) *hb { // the record goes on to 1 s
		return b.add(history.Event{T: 1000 * ms, End: 1000 * ms, Client: 2, Key: "other", Op: history.OpAcquire, Result: history.OK}).
			add(history.Event{T: 1001 * ms, End: 1001 * ms, Client: 2, Key: "other", Op: history.OpRelease, Result: history.OK})
	}
	// A watchdog that renews a lease its holder released: the key is
	// extended every 40 ms by client 0's connection after its release.
	renewed := func() *hb {
		b := recordHB()
		b.acq(0, 0, 1, 0, history.OK, 1).cmd(0, 1, []string{"SET", recKey, "tokA", "PX", "100", "NX"}).srv(1, "set").srv(1, "expire")
		b.read(0, 2, 0).write(0, 3, 4, 1, 0, true).rel(0, 10, 11, 0).cmd(0, 11, []string{"EVALSHA", "sha", "1", recKey, "tokA"}, []string{"GET", recKey})
		for t := int64(40); t < 600; t += 40 {
			b.cmd(0, t, []string{"PEXPIRE", recKey, "100"}).srv(t, "expire")
		}
		return end(b.srv(700, "expired"))
	}
	// setnx-expire's client dies between SETNX and EXPIRE: no TTL.
	noTTL := func() *hb {
		b := recordHB()
		b.acq(0, 0, 1, 0, history.OK, 1).cmd(0, 1, []string{"SETNX", recKey, "tokA"}).srv(1, "set").read(0, 2, 0)
		b.add(history.Event{T: 3 * ms, End: 5 * ms, Client: -1, Op: history.OpFault, Fault: &history.Fault{ID: 1,
			Kind: history.FaultCrashClient, Target: "client 0", Applied: true,
			Request: map[string]string{"point": history.PointBeforeWrite}, Effect: map[string]string{history.EffectCrashedAt: "5.00"}}})
		// The record still saw the key later (a refused SETNX): at the
		// record's end only what it saw after the lease stands.
		return end(b.cmd(2, 500, []string{"SETNX", recKey, "tokC"}))
	}
	// A library that sets a TTL of its own, 900 ms for the scenario's 100 ms,
	// and whose release never reached the server: the key outlives every
	// lease.
	notApplied := func() *hb {
		b := recordHB()
		b.acq(0, 0, 1, 0, history.OK, 1).cmd(0, 1, []string{"SET", recKey, "tokA", "PX", "900", "NX"}).srv(1, "set").srv(1, "expire")
		b.read(0, 2, 0).write(0, 3, 4, 1, 0, true).rel(0, 10, 11, 0)
		return end(b.srv(901, "expired"))
	}
	// An acquire that took the key, then returned an error (its caller's
	// context was cancelled), and whose renewal goes on: client 1's
	// connection extends the key every 40 ms after client 0 released it.
	orphan := func() *hb {
		b := recordHB()
		b.acq(0, 0, 1, 0, history.OK, 1).cmd(0, 1, []string{"SET", recKey, "tokA", "PX", "100", "NX"}).srv(1, "set").srv(1, "expire")
		b.read(0, 2, 0).write(0, 3, 4, 1, 0, true).rel(0, 10, 11, 0).cmd(0, 11, []string{"EVALSHA", "sha", "1", recKey, "tokA"}, []string{"DEL", recKey}).srv(11, "del")
		b.acq(1, 5, 13, 0, history.Fail, 1).cmd(1, 12, []string{"SET", recKey, "tokB", "PX", "100", "NX"}).srv(12, "set").srv(12, "expire")
		for t := int64(45); t < 600; t += 40 {
			b.cmd(1, t, []string{"PEXPIRE", recKey, "100"}).srv(t, "expire")
		}
		return end(b.srv(700, "expired"))
	}
	// A correct lock: released, deleted.
	correct := func() *hb {
		b := recordHB()
		b.acq(0, 0, 1, 101, history.OK, 1).cmd(0, 1, []string{"SET", recKey, "tokA", "PX", "100", "NX"}).srv(1, "set").srv(1, "expire")
		b.read(0, 2, 0).write(0, 3, 4, 1, 0, true).rel(0, 10, 11, 0).cmd(0, 11, []string{"EVALSHA", "sha", "1", recKey, "tokA"}, []string{"DEL", recKey}).srv(11, "del")
		return end(b)
	}
	for _, tc := range []struct {
		name, cause, says string
		b                 *hb
	}{
		{"renewed after release", CauseRenewedAfterRelease, "client 0's lease on k ended at 0.010 s, and k was renewed at 0.040 s by client 0's connection; nobody could acquire it from 0.110 s to 0.700 s.", renewed()},
		{"release not applied", CauseReleaseNotApplied, "client 0 released k at 0.010 s, and no delete of it reached the server; nobody could acquire it from 0.110 s to 0.901 s.", notApplied()},
		{"renewed after a failed acquire", CauseRenewedAfterFailedAcquire, "client 1's acquire of k returned without the lock at 0.013 s, after its SET took the key at 0.012 s, and k was renewed at 0.045 s by client 1's connection; nobody could acquire it from 0.113 s to 0.700 s.", orphan()},
		{"no TTL", CauseKeyWithoutTTL, "k was written at 0.001 s by client 0's connection without a TTL, and client 0's lease ended at 0.005 s", noTTL()},
	} {
		r := Check(tc.b.ev, Options{})
		wantVerdicts(t, r, map[string]Verdict{CheckLiveness: Invalid})
		var got []Violation
		for _, v := range r.Violations {
			if v.Check == CheckLiveness {
				got = append(got, v)
			}
		}
		if len(got) != 1 || got[0].Cause != tc.cause || !strings.Contains(got[0].Explanation, tc.says) {
			t.Errorf("%s: want one %s saying %q: %+v", tc.name, tc.cause, tc.says, got)
		}
	}
	wantVerdicts(t, Check(correct().ev, Options{}), map[string]Verdict{CheckLiveness: Valid})
	// At the record's end a delete the observer did not see (it stopped
	// with the run) is no stranding: released, then nothing recorded.
	unseen := recordHB()
	unseen.acq(0, 0, 1, 101, history.OK, 1).cmd(0, 1, []string{"SET", recKey, "tokA", "PX", "100", "NX"}).srv(1, "set").srv(1, "expire").rel(0, 10, 11, 0)
	wantVerdicts(t, Check(end(unseen).ev, Options{}), map[string]Verdict{CheckLiveness: Valid})
	// The key written again after the release, by an acquire that never
	// returned: that lease is the key's now, not a release that failed.
	retaken := recordHB()
	retaken.acq(0, 0, 1, 0, history.OK, 1).cmd(0, 1, []string{"SET", recKey, "tokA", "PX", "1000", "NX"}).srv(1, "set").srv(1, "expire")
	retaken.rel(0, 10, 11, 0).srv(30, "expired").acq(1, 49, 60, 0, history.Unknown, 1).cmd(1, 50, []string{"SET", recKey, "tokB", "PX", "1000", "NX"}).srv(50, "set").srv(50, "expire")
	wantVerdicts(t, Check(end(retaken.srv(1050, "expired")).ev, Options{}), map[string]Verdict{CheckLiveness: Valid})
	// A waiter that saw the renewed key: one violation, the waits', with
	// the stranding's cause.
	b := renewed()
	for t := int64(20); t < 690; t += 50 {
		b.acq(1, t, t+50, 0, history.Fail, 1)
	}
	b.acq(1, 700, 701, 0, history.OK, 1).rel(1, 705, 706, 0)
	r := Check(b.ev, Options{})
	if len(r.Violations) != 1 || r.Violations[0].Cause != CauseRenewedAfterRelease || !strings.Contains(r.Violations[0].Detail, "while clients waited") {
		t.Errorf("want the waits' violation with cause %s: %+v", CauseRenewedAfterRelease, r.Violations)
	}
}
