package checker

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// The causes from the lock's own commands, on histories with no fault: each
// names the command and its client from the record, and nothing is left
// unknown. Without the record the same overlaps are unknown.

// acqTok: client c's acquire at [t0,t1] ms returned token tok (fence f).
func (b *hb) acqTok(c int, t0, t1, deadline int64, tok string, fence uint64, depth int) *hb {
	return b.add(history.Event{T: t0 * ms, End: t1 * ms, Client: c, Key: "k", Op: history.OpAcquire, Result: history.OK,
		Token: tok, Fence: fence, Depth: depth, Deadline: deadline * ms})
}

// hashEnter: client c's acquire script at t ms adds one level to its field
// tok of the hash and resets its TTL, asking nothing.
func (b *hb) hashEnter(c int, t int64, tok string) *hb {
	return b.cmd(c, t, []string{"EVALSHA", "acq", "1", recKey, tok}, []string{"HINCRBY", recKey, tok, "1"}, []string{"PEXPIRE", recKey, "100"})
}

// causesOf returns the violations of check, failing on any unknown cause.
func causesOf(t *testing.T, r *Result, check string) []Violation {
	t.Helper()
	checkSentences(t, r)
	var out []Violation
	for _, v := range r.Violations {
		if v.Cause == CauseUnknown || v.Cause == "" {
			t.Errorf("a violation with no fault in play has cause %q: %+v", v.Cause, v)
		}
		if v.Check == check {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %s violation: %+v", check, r.Violations)
	}
	return out
}

// wantOwnCause: every violation of check has cause and an explanation
// holding want; the incidents' sentences tell it too.
func wantOwnCause(t *testing.T, r *Result, check, cause, want string) {
	t.Helper()
	for _, v := range causesOf(t, r, check) {
		if v.Cause != cause || !strings.Contains(v.Explanation, want) {
			t.Errorf("%s violation: cause %s, explanation %q; want %s saying %q", check, v.Cause, v.Explanation, cause, want)
		}
	}
	for _, in := range r.Incidents {
		if in.Cause == cause && !strings.Contains(in.Sentence, want) {
			t.Errorf("incident %q does not say %q", in.Sentence, want)
		}
	}
}

// streamedSame checks the history streamed in small windows against the
// whole check (CompareEnv fails on a difference).
func streamedSame(t *testing.T, b *hb) {
	t.Helper()
	t.Setenv(CompareEnv, "1")
	p := writeHistory(t, filepath.Join(t.TempDir(), history.CompactFile), b.ev)
	if _, err := CheckFile(p, Options{batch: 3}); err != nil {
		t.Fatal(err)
	}
}

// Redlock with a quorum of 2 of 5: client 0's SETs took n1 and n2, client
// 1's n3, n4 and n5, both acquires returned.
func TestOwnCauseMinorityQuorum(t *testing.T) {
	quorum := func(aNodes, bNodes []string) *hb {
		b := newHB(map[string]any{history.MetaCommandRecord: "monitor", history.MetaKeyPrefix: "p:", "topology": "independent"})
		for _, n := range []string{"n1", "n2", "n3", "n4", "n5"} {
			b.cmdOn(n, 2, 0, []string{"GET", "p:other"}) // every node in the record
		}
		for _, n := range aNodes {
			b.add(history.Event{T: 1 * ms, Client: 0, Key: "k", Op: history.OpCommand, Node: n, Cmd: &history.Command{Args: []string{"SET", recKey, "tokA", "NX", "PX", "100"}}})
		}
		for _, n := range bNodes {
			b.add(history.Event{T: 1 * ms, Client: 1, Key: "k", Op: history.OpCommand, Node: n, Cmd: &history.Command{Args: []string{"SET", recKey, "tokB", "NX", "PX", "100"}}})
		}
		b.acqTok(0, 0, 3, 90, "tokA", 0, 1).acqTok(1, 0, 4, 90, "tokB", 0, 1)
		b.rel(0, 40, 41, 0).rel(1, 42, 43, 0)
		return b
	}
	b := quorum([]string{"n1", "n2"}, []string{"n3", "n4", "n5"})
	wantOwnCause(t, Check(b.ev, Options{}), CheckMutex, CauseMinorityQuorum, "quorum of 2 of 5: client 0 held n1,n2 while client 1 held n3,n4,n5")
	streamedSame(t, b)
	// Two minorities.
	wantOwnCause(t, Check(quorum([]string{"n1", "n2"}, []string{"n3", "n4"}).ev, Options{}), CheckMutex, CauseMinorityQuorum, "client 0 held n1,n2 while client 1 held n3,n4")
	// Without the record nothing says how.
	for _, v := range Check(b.ev, Options{NoCommandRecord: true}).Violations {
		if v.Check == CheckMutex && v.Cause != CauseUnknown {
			t.Errorf("without the record: cause %s", v.Cause)
		}
	}
}

// A take at the edge of the replay's certainty is no minority: client 0's
// keys on the five masters expire at 101 ms while it still believes it
// holds; client 1's SET NXs land at 101.5 ms on four of them (within the
// record's 2 ms margin: taken or not, the replay cannot tell) and at 104 ms
// on the fifth. Client 1 may have taken all five: the overlap is client 0's
// key expiring under it, not a quorum of 1 of 5 (pottery-redlock, explored:
// its retry lands as the last holder's keys expire).
func TestOwnCauseQuorumAtTheExpiryIsNoMinority(t *testing.T) {
	b := newHB(map[string]any{history.MetaCommandRecord: "monitor", history.MetaKeyPrefix: "p:", "topology": "independent"})
	nodes := []string{"n1", "n2", "n3", "n4", "n5"}
	for _, n := range nodes {
		b.cmdOn(n, 0, 0, []string{"GET", "p:other"}) // every node in the record
	}
	for _, n := range nodes {
		b.add(history.Event{T: 1 * ms, Client: 0, Key: "k", Op: history.OpCommand, Node: n, Cmd: &history.Command{Args: []string{"SET", recKey, "tokA", "NX", "PX", "100"}}})
	}
	for _, n := range nodes {
		t := 101*ms + ms/2
		if n == "n5" {
			t = 104 * ms
		}
		b.add(history.Event{T: t, Client: 1, Key: "k", Op: history.OpCommand, Node: n, Cmd: &history.Command{Args: []string{"SET", recKey, "tokB", "NX", "PX", "100"}}})
	}
	b.acqTok(0, 0, 2, 200, "tokA", 0, 1).acqTok(1, 100, 105, 190, "tokB", 0, 1)
	b.rel(0, 150, 151, 0).rel(1, 160, 161, 0)
	for _, v := range causesOf(t, Check(b.ev, Options{}), CheckMutex) {
		if v.Cause == CauseMinorityQuorum {
			t.Errorf("minority-quorum from takes the replay cannot tell: %s", v.Explanation)
		}
	}
	streamedSame(t, b)
}

// reentrant-no-owner-check: client 1's acquire script HINCRBYs its own
// field into the hash client 0 holds, and its PEXPIRE extends client 0's
// key: an acquire, not a renewal.
func TestOwnCauseForeignReentry(t *testing.T) {
	b := recordHB()
	b.acqTok(0, 0, 1, 101, "tokA", 0, 1).hashEnter(0, 1, "tokA")
	b.acqTok(1, 10, 11, 111, "tokB", 0, 1).hashEnter(1, 10, "tokB")
	b.rel(0, 40, 41, 0).rel(1, 42, 43, 0)
	r := Check(b.ev, Options{})
	wantOwnCause(t, r, CheckMutex, CauseForeignReentry, "HINCRBY by client 1 on client 0's hash k")
	ext := causesOf(t, r, CheckUnlock)
	if len(ext) != 1 || ext[0].Cause != CauseForeignReentry || !strings.Contains(ext[0].Detail, "client 1's acquire extended k") {
		t.Errorf("unlock violations %+v: want client 1's acquire's PEXPIRE, told as foreign-reentry", ext)
	}
	streamedSame(t, b)

	// The correct acquire asks first: its script ran only EXISTS and
	// HEXISTS, and it returned refused.
	c := recordHB()
	c.acqTok(0, 0, 1, 101, "tokA", 0, 1)
	c.cmd(0, 1, []string{"EVALSHA", "acq", "1", recKey, "tokA"}, []string{"EXISTS", recKey}, []string{"HINCRBY", recKey, "tokA", "1"}, []string{"PEXPIRE", recKey, "100"})
	c.acq(1, 10, 11, 0, history.Fail, 1).cmd(1, 10, []string{"EVALSHA", "acq", "1", recKey, "tokB"}, []string{"EXISTS", recKey}, []string{"HEXISTS", recKey, "tokB"})
	c.rel(0, 40, 41, 0)
	if rc := Check(c.ev, Options{}); len(rc.Violations) != 0 {
		t.Errorf("the correct acquire: %+v", rc.Violations)
	}
}

// reentrant-early-free: client 0 leaves depth 2 and its release's DEL
// frees the key; client 1 takes it while client 0 still holds depth 1.
func TestOwnCauseFreedAboveZero(t *testing.T) {
	b := recordHB()
	b.acqTok(0, 0, 1, 101, "tokA", 0, 1).hashEnter(0, 1, "tokA")
	b.acqTok(0, 10, 11, 111, "tokA", 0, 2).hashEnter(0, 11, "tokA")
	b.rel(0, 20, 21, 1).cmd(0, 20, []string{"EVALSHA", "rel", "1", recKey, "tokA"}, []string{"HINCRBY", recKey, "tokA", "-1"}, []string{"DEL", recKey})
	b.acqTok(1, 22, 23, 123, "tokB", 0, 1).hashEnter(1, 22, "tokB")
	b.rel(0, 30, 31, 0).rel(1, 40, 41, 0)
	r := Check(b.ev, Options{})
	wantOwnCause(t, r, CheckReentrancy, CauseFreedAboveZero, "a release's DEL freed k at depth 1")
	wantOwnCause(t, r, CheckMutex, CauseFreedAboveZero, "a release's DEL freed k at depth 1: client 0's release at 0.020 s left depth 1")
	streamedSame(t, b)
}

// fenced-random: client 1's fence is below client 0's, granted before its
// acquire began, and its acquire ran no INCR. With the INCR in the record
// the fence is still not the counter's; after an empty restart it is the
// restart's.
func TestOwnCauseFenceNotMonotonic(t *testing.T) {
	run := func(incr bool, fault bool) *Result {
		b := recordHB()
		b.acqTok(0, 0, 1, 101, "tokA", 18e18, 1).cmd(0, 1, []string{"SET", recKey, "tokA", "NX", "PX", "100"})
		b.rel(0, 5, 6, 0).cmd(0, 5, []string{"EVALSHA", "rel", "2", recKey, "c", "tokA"}, []string{"GET", recKey}, []string{"DEL", recKey})
		if fault {
			b.add(history.Event{T: 7 * ms, End: 8 * ms, Client: -1, Node: "n1", Op: history.OpFault, Fault: &history.Fault{ID: 1, Kind: history.FaultRestartNode,
				Target: "node n1", Request: map[string]string{history.ParamMode: "empty"}, Applied: true}})
		}
		b.acqTok(1, 10, 11, 111, "tokB", 15e18, 1)
		if incr {
			b.cmd(1, 10, []string{"EVALSHA", "acq", "2", recKey, "p:{k}:fence", "tokB"}, []string{"SET", recKey, "tokB", "NX", "PX", "100"}, []string{"INCR", "p:{k}:fence"})
		} else {
			b.cmd(1, 10, []string{"SET", recKey, "tokB", "NX", "PX", "100"})
		}
		b.rel(1, 20, 21, 0)
		return Check(b.ev, Options{})
	}
	wantOwnCause(t, run(false, false), CheckFencing, CauseFenceNotMonotonic, "fence 1.5e19 after 1.8e19: not from INCR: client 1's acquire")
	wantOwnCause(t, run(true, false), CheckFencing, CauseFenceNotMonotonic, "client 1's acquire ran its script's INCR on n1")
	for _, v := range run(false, true).Violations {
		if v.Check == CheckFencing && v.Cause != CauseEmptyRestart {
			t.Errorf("after an empty restart: cause %s, want %s", v.Cause, CauseEmptyRestart)
		}
	}
}

// A lock that promises no deadline: client 0's key expires by the TTL its
// SET set, client 1 takes it, and client 0 still believes. No notification
// arrived; the record's commands tell the expiry. A DEL in between is no
// expiry: the overlap stays unexplained by this.
func TestRecordExpiryExplainsOverlap(t *testing.T) {
	run := func(del bool) *Result {
		b := recordHB()
		b.acqTok(0, 0, 1, 0, "tokA", 0, 1).cmd(0, 1, []string{"SET", recKey, "tokA", "NX", "PX", "100"})
		if del {
			b.cmd(0, 60, []string{"DEL", recKey}) // its own stray DEL
		}
		b.acqTok(1, 110, 121, 0, "tokB", 0, 1).cmd(1, 120, []string{"SET", recKey, "tokB", "NX", "PX", "100"})
		b.rel(0, 150, 151, 0).rel(1, 160, 161, 0)
		return Check(b.ev, Options{})
	}
	for _, v := range causesOf(t, run(false), CheckMutex) {
		if want := "client 0's key k expired on n1 at 0.101 s by the TTL its SET at 0.001 s set"; v.Cause != CauseExpired || !strings.Contains(v.Explanation, want) {
			t.Errorf("mutex violation: cause %s, %q; want %s saying %q", v.Cause, v.Explanation, CauseExpired, want)
		}
	}
	n := 0
	for _, v := range run(true).Violations {
		if v.Check == CheckMutex {
			n++
			if v.Cause == CauseExpired {
				t.Errorf("a DEL before client 1's SET, yet told as an expiry: %s", v.Explanation)
			}
		}
	}
	if n == 0 {
		t.Error("no overlap with the DEL")
	}
}
