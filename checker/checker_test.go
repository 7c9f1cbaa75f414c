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
	checkSentences(t, r)
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

func TestNoEvidenceIsUnknown(t *testing.T) {
	b := newHB(nil)
	b.acq(0, 0, 50, 0, history.Fail, 1)
	r := Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckMutex: Unknown, CheckResource: Unknown})
	if r.Verdict != Unknown {
		t.Fatalf("verdict %s, want unknown", r.Verdict)
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
