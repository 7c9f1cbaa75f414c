package checker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

const ms = int64(1e6)

// hb builds histories: times in ms, TTL 100 ms, one key "k".
type hb struct {
	ev []history.Event
}

func newHB(meta map[string]any) *hb {
	m := map[string]any{"ttl_ms": 100.0, "honours": true, "topology": "single", "resource": "counter"}
	for k, v := range meta {
		m[k] = v
	}
	return &hb{ev: []history.Event{{Op: history.OpRun, Client: -1, Meta: m}}}
}

func (b *hb) add(e history.Event) *hb { b.ev = append(b.ev, e); return b }

// writeHistory writes events to path (its form by its extension) and
// returns path.
func writeHistory(t testing.TB, path string, events []history.Event) string {
	t.Helper()
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range events {
		w.Append(&events[i])
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// acq: client c acquires at [t0,t1] ms with a deadline t1+ttl (0 = none).
func (b *hb) acq(c int, t0, t1, deadline int64, res history.Result, depth int) *hb {
	e := history.Event{T: t0 * ms, End: t1 * ms, Client: c, Key: "k", Op: history.OpAcquire, Result: res, Depth: depth}
	if deadline > 0 {
		e.Deadline = deadline * ms
	}
	return b.add(e)
}
func (b *hb) read(c int, t, v int64) *hb {
	return b.add(history.Event{T: t * ms, End: t * ms, Client: c, Key: "k", Op: history.OpRead, Value: v})
}
func (b *hb) write(c int, t0, t1, v int64, fence uint64, ok bool) *hb {
	r := history.OK
	if !ok {
		r = history.Fail
	}
	return b.add(history.Event{T: t0 * ms, End: t1 * ms, Client: c, Key: "k", Op: history.OpWrite, Value: v, Fence: fence, Result: r})
}
func (b *hb) rel(c int, t0, t1 int64, remaining int) *hb {
	return b.add(history.Event{T: t0 * ms, End: t1 * ms, Client: c, Key: "k", Op: history.OpRelease, Depth: remaining, Result: history.OK})
}
func (b *hb) srv(t int64, what string) *hb {
	return b.add(history.Event{T: t * ms, Client: -1, Key: "k", Op: history.OpServer, Node: "n1", Detail: what})
}

// cycle: a full correct cycle of client c over [t, t+10] ms writing v.
func (b *hb) cycle(c int, t, v int64) *hb {
	return b.acq(c, t, t+1, t+100, history.OK, 1).read(c, t+2, v-1).write(c, t+5, t+6, v, 0, true).rel(c, t+8, t+9, 0)
}

func verdicts(r *Result) map[string]Verdict {
	out := map[string]Verdict{}
	for n, c := range r.Checks {
		out[n] = c.Verdict
	}
	return out
}

func wantVerdicts(t *testing.T, r *Result, want map[string]Verdict) {
	t.Helper()
	got := verdicts(r)
	for n, v := range want {
		if got[n] != v {
			t.Errorf("check %s = %q, want %q (all: %v; violations: %+v)", n, got[n], v, got, r.Violations)
		}
	}
}

func TestSequentialHistoryIsValid(t *testing.T) {
	b := newHB(nil)
	for i := int64(0); i < 20; i++ {
		b.cycle(int(i%3), i*10, i+1)
	}
	r := Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckMutex: Valid, CheckResource: Valid, CheckLiveness: Valid})
	if r.Verdict != Valid || len(r.Violations) != 0 {
		t.Fatalf("verdict %s with %d violations, want valid with none", r.Verdict, len(r.Violations))
	}
	if _, ok := r.Checks[CheckFencing]; ok {
		t.Errorf("fencing check ran on a history without fences")
	}
	if _, ok := r.Checks[CheckUnlock]; ok {
		t.Errorf("unlock check ran without an observer record")
	}
}

// The gc-pause shape: A is paused after its last lease check; its deadline
// passes; B acquires and writes; A resumes and writes a value based on its
// stale read.
func gcPause(fenced bool) *hb {
	b := newHB(nil)
	b.acq(0, 0, 1, 101, history.OK, 1).read(0, 2, 0)
	b.add(history.Event{T: 3 * ms, End: 300 * ms, Client: 0, Key: "k", Op: history.OpPause, Detail: "before-write"})
	b.srv(101, "expired")
	b.acq(1, 50, 110, 210, history.OK, 1).read(1, 111, 0).write(1, 112, 113, 1, 2, true).rel(1, 115, 116, 0)
	b.write(0, 301, 302, 1, 1, !fenced).rel(0, 303, 304, 0)
	if fenced {
		b.ev[1].Fence = 1
		b.ev[4].Fence = 2
	}
	return b
}

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

func TestNoEvidenceIsUnknown(t *testing.T) {
	b := newHB(nil)
	b.acq(0, 0, 50, 0, history.Fail, 1)
	r := Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckMutex: Unknown, CheckResource: Unknown})
	if r.Verdict != Unknown {
		t.Fatalf("verdict %s, want unknown", r.Verdict)
	}
}

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

func TestLivenessKeyNeverFreed(t *testing.T) {
	b := newHB(nil)
	b.cycle(0, 0, 1)
	// Client 0 takes the key with an unknown outcome (crash) and it is never
	// freed; clients 1 and 2 try for 2 s.
	b.acq(0, 20, 21, 0, history.Unknown, 1)
	for t := int64(30); t < 2000; t += 200 {
		b.acq(1, t, t+200, 0, history.Fail, 1)
	}
	r := Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckLiveness: Invalid})
	// With the key freed after the TTL the wait is short: valid.
	b2 := newHB(nil)
	b2.cycle(0, 0, 1).acq(0, 20, 21, 0, history.Unknown, 1)
	b2.acq(1, 30, 120, 0, history.Fail, 1).cycle(1, 125, 2)
	wantVerdicts(t, Check(b2.ev, Options{}), map[string]Verdict{CheckLiveness: Valid})
}

func TestLivenessDiscountsNodeFaults(t *testing.T) {
	b := newHB(nil)
	b.cycle(0, 0, 1)
	b.add(history.Event{T: 20 * ms, End: 21 * ms, Client: -1, Op: history.OpFault, Node: "n1",
		Fault: &history.Fault{ID: 1, Kind: "pause-node", Target: "node n1", Applied: true}})
	for t := int64(30); t < 1000; t += 100 {
		b.acq(1, t, t+100, 0, history.Fail, 1)
	}
	b.add(history.Event{T: 1000 * ms, End: 1001 * ms, Client: -1, Op: history.OpHeal, Fault: &history.Fault{ID: 1, Kind: "pause-node", Applied: true}})
	b.cycle(1, 1010, 2)
	r := Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckLiveness: Valid, CheckFaults: Valid})
	if got := r.Checks[CheckLiveness].Stats["max_unavailable_in_faults_ms"].(float64); got < 900 {
		t.Errorf("unavailability during the fault %.0f ms, want ≥ 900", got)
	}
}

// With a node restarted twice (each restart in effect until the run heals),
// an overlap after the second restart is blamed on the second.
func TestCauseNamesLatestRestart(t *testing.T) {
	b := newHB(map[string]any{"topology": "independent"})
	restart := func(id int, t int64) {
		b.add(history.Event{T: t * ms, End: (t + 20) * ms, Client: -1, Op: history.OpFault, Node: "n3",
			Fault: &history.Fault{ID: id, Kind: "restart-node", Target: "node n3", Request: map[string]string{"mode": "empty"}, Applied: true}})
	}
	b.cycle(0, 0, 1)
	restart(1, 20)
	b.cycle(1, 50, 2)
	b.acq(0, 300, 301, 400, history.OK, 1).read(0, 302, 2)
	restart(2, 305)
	b.acq(1, 330, 331, 430, history.OK, 1).read(1, 332, 2).write(1, 335, 336, 3, 0, true).rel(1, 337, 338, 0)
	b.write(0, 350, 351, 3, 0, true).rel(0, 352, 353, 0)
	for id := 1; id <= 2; id++ {
		b.add(history.Event{T: 900 * ms, End: 901 * ms, Client: -1, Op: history.OpHeal, Fault: &history.Fault{ID: id, Kind: "restart-node", Applied: true}})
	}
	r := Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckMutex: Invalid})
	v := r.Violations[0]
	if v.Cause != CauseEmptyRestart || !strings.Contains(v.Explanation, "at 0.305 s") {
		t.Fatalf("cause %s: %q, want %s naming the restart at 0.305 s", v.Cause, v.Explanation, CauseEmptyRestart)
	}
}

func TestUnappliedFaultMakesRunUnknown(t *testing.T) {
	b := newHB(nil)
	b.cycle(0, 0, 1)
	b.add(history.Event{T: 20 * ms, Client: -1, Op: history.OpFault,
		Fault: &history.Fault{ID: 1, Kind: "pause-client", Target: "holder", Effect: map[string]string{"reason": "no client holds a lock now"}}})
	b.cycle(1, 30, 2)
	r := Check(b.ev, Options{})
	if r.Verdict != Unknown || r.Checks[CheckFaults].Verdict != Unknown {
		t.Fatalf("verdict %s (faults %s), want unknown", r.Verdict, r.Checks[CheckFaults].Verdict)
	}
	if !strings.Contains(strings.Join(r.Checks[CheckFaults].Notes, " "), "no client holds") {
		t.Errorf("notes %v do not say why the fault failed", r.Checks[CheckFaults].Notes)
	}
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

func TestCheckFileToleratesTornTail(t *testing.T) {
	dir := t.TempDir()
	p := writeHistory(t, filepath.Join(dir, "history.jsonl"), gcPause(false).ev)
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"t":1,"op":"acq`)
	f.Close()
	r, err := CheckFile(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Torn || r.Verdict != Invalid {
		t.Fatalf("torn=%v verdict=%s, want torn and invalid", r.Torn, r.Verdict)
	}
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

// In a Redis Cluster a failover or isolate-node demotes its old master from
// the moment it fires: what that node reports afterwards (a cut-off master's
// dropped writes, a rejoined replica replaying its new master's stream late
// and in bunches) does not count; the new master counts once elected.
func TestClusterMasterFollowsFaults(t *testing.T) {
	m := newModel()
	m.add(&history.Event{Op: history.OpRun, Client: -1, Meta: map[string]any{"topology": "cluster", "ttl_ms": 1000.0}})
	m.add(&history.Event{T: 10 * ms, End: 20 * ms, Client: -1, Op: history.OpFault, Node: "n2", Fault: &history.Fault{ID: 1,
		Kind: history.FaultIsolateNode, Target: "node n2", Applied: true,
		Effect: map[string]string{history.EffectOldMaster: "n2", history.EffectNewMaster: "n5"}}})
	n2, n5, n1 := m.node("n2"), m.node("n5"), m.node("n1")
	m.prepare(Options{})
	for _, c := range []struct {
		node int16
		t    int64
		want bool
	}{{n2, 5, true}, {n2, 15, false}, {n2, 500, false}, {n5, 500, true}, {n1, 500, true}} {
		if got := m.masterAt(c.node, c.t*ms); got != c.want {
			t.Errorf("masterAt(%s, %d ms) = %v, want %v", m.nodes[c.node], c.t, got, c.want)
		}
	}
}
