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

// incrAfterSet is issue 40's history: a lock whose token is an INCR after
// its SET NX, commands slowed. Client 0's SET NX took k at 1 ms; its INCR
// ran at 250 ms (fence 12), after its key had expired (101 ms) and clients
// 1 and 2 had taken k in turn with fences 10 and 11; its acquire returned
// at 251 ms. Its acquire's window contains theirs, so the acks' order says
// nothing; the server's order has client 0's key first and its fence
// highest.
func incrAfterSet() *hb {
	const fk = "p:{k}:fence"
	b := recordHB()
	b.ev[0].Meta["resource"] = "register"
	b.cmd(0, 1, []string{"SET", recKey, "t0", "PX", "100", "NX"})
	b.acq(1, 105, 108, 205, history.OK, 1).cmd(1, 106, []string{"SET", recKey, "t1", "PX", "100", "NX"}).cmd(1, 107, []string{"INCR", fk})
	b.read(1, 109, 0).write(1, 110, 111, 1, 10, true).rel(1, 119, 121, 0).cmd(1, 120, []string{"DEL", recKey})
	b.acq(2, 130, 133, 230, history.OK, 1).cmd(2, 131, []string{"SET", recKey, "t2", "PX", "100", "NX"}).cmd(2, 132, []string{"INCR", fk})
	b.read(2, 134, 1).write(2, 135, 136, 2, 11, true).rel(2, 140, 142, 0).cmd(2, 141, []string{"DEL", recKey})
	b.cmd(0, 250, []string{"INCR", fk}).acq(0, 0, 251, 0, history.OK, 1)
	b.read(0, 252, 2).write(0, 253, 254, 3, 12, true).rel(0, 255, 256, 0)
	setFences(b, 12, 10, 11)
	return b
}

func TestFencingInTheServersOrder(t *testing.T) {
	b := incrAfterSet()
	r := Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckFencing: Invalid})
	var late int
	for _, v := range r.Violations {
		if v.Check != CheckFencing {
			continue
		}
		if v.Cause != CauseFenceIssuedLate || !strings.Contains(v.Explanation, "INCR ran on n1 at 0.250 s") {
			t.Errorf("fencing violation: cause %s, want %s: %s", v.Cause, CauseFenceIssuedLate, v.Explanation)
		}
		late++
	}
	if late != 2 {
		t.Errorf("%d fencing violations, want 2 (fences 10 and 11 after client 0's key took 12): %+v", late, r.Violations)
	}
	streamedSame(t, b)
	// Without the record the acquires' windows are all there is: client
	// 0's contains the others', and nothing is certain.
	r = Check(b.ev, Options{NoCommandRecord: true})
	wantVerdicts(t, r, map[string]Verdict{CheckFencing: Valid})
	// With fence 9, below its successors' (as when the counter is
	// INCRed with the SET NX, in one script), the server's order holds.
	setFences(b, 9, 10, 11)
	wantVerdicts(t, Check(b.ev, Options{}), map[string]Verdict{CheckFencing: Valid})
}

// setFences gives client i's acquires fence fs[i].
func setFences(b *hb, fs ...uint64) {
	for i := range b.ev {
		if b.ev[i].Op == history.OpAcquire {
			b.ev[i].Fence = fs[b.ev[i].Client]
		}
	}
}

// A take is pinned to the acquire it belongs to: client 0's next acquire,
// invoked right after its last one's take (within the record's slack),
// whose own take the record lost (its end), is not judged by the earlier
// take. Taken as its own, client 0's fence 3 looked issued before client
// 1's fence 2 (a correct fenced lock on smoke, fencing invalid 2/2).
func TestFencingTakeIsThisAcquiresOwn(t *testing.T) {
	const fk = "p:{k}:fence"
	b := recordHB()
	b.ev[0].Meta["resource"] = "register"
	b.acq(0, 0, 2, 100, history.OK, 1).cmd(0, 1, []string{"EVALSHA", "sha", "2", recKey, fk, "t0", "100"}, []string{"SET", recKey, "t0", "NX", "PX", "100"}, []string{"INCR", fk})
	b.rel(0, 2, 2, 0).cmd(0, 2, []string{"EVALSHA", "rel", "1", recKey, "t0"}, []string{"GET", recKey}, []string{"DEL", recKey})
	b.acq(1, 3, 6, 105, history.OK, 1).cmd(1, 5, []string{"EVALSHA", "sha", "2", recKey, fk, "t1", "100"}, []string{"SET", recKey, "t1", "NX", "PX", "100"}, []string{"INCR", fk})
	b.rel(1, 7, 8, 0).cmd(1, 7, []string{"EVALSHA", "rel", "1", recKey, "t1"}, []string{"GET", recKey}, []string{"DEL", recKey})
	// Client 0's next acquire took the key at about 9 ms: not in the record.
	b.acq(0, 3, 10, 110, history.OK, 1).rel(0, 11, 12, 0)
	setFences(b, 3, 2)
	for i := range b.ev { // client 0's first acquire had fence 1
		if e := &b.ev[i]; e.Op == history.OpAcquire && e.Client == 0 && e.End == 2*ms {
			e.Fence = 1
		}
	}
	r := Check(b.ev, Options{})
	if v := r.Checks[CheckFencing].Verdict; v == Invalid {
		t.Errorf("fencing invalid, want no violation: %+v", r.Violations)
	}
	streamedSame(t, b)
}
