package checker

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// clockMark: the record's marker that n1's clock reads h + off from harness
// time t ms on (history.CmdClock), at rate (1: none).
func (b *hb) clockMark(t, offMS int64, rate float64) *hb {
	e := history.Event{T: t * ms, Client: -1, Op: history.OpCommand, Node: "n1", Detail: history.CmdClock, Value: offMS * ms}
	if rate != 1 {
		e.Depth = int(rate * history.ClockRateUnit)
	}
	return b.add(e)
}

// jumpBack is three cycles of a correct lock on n1, whose clock jumps 600
// ms back at 600 ms: client 1 holds (0-60 ms), client 0 (70-190 ms), and,
// after the jump, client 1 again (610-700 ms, stamped 10-100 ms). Sorted by
// their stamps, client 1's last release (stamp 100) falls inside client 0's
// hold and its script's DEL reads as deleting client 0's key: issue 33's
// false positive. marked: the history has the record's clock marker.
func jumpBack(marked bool) *hb {
	b := recordHB()
	release := func(c int, t int64, stamp int64, tok string) {
		b.rel(c, t-1, t+1, 0).cmd(c, stamp, []string{"EVALSHA", "sha", "1", recKey, tok}, []string{"GET", recKey}, []string{"DEL", recKey})
	}
	b.acq(1, 0, 2, 201, history.OK, 1).cmd(1, 1, []string{"SET", recKey, "tokB1", "PX", "200", "NX"})
	release(1, 60, 60, "tokB1")
	b.acq(0, 70, 72, 271, history.OK, 1).cmd(0, 71, []string{"SET", recKey, "tokA", "PX", "200", "NX"})
	release(0, 190, 190, "tokA")
	if marked {
		b.clockMark(600, -600, 1)
	}
	b.acq(1, 609, 611, 811, history.OK, 1).cmd(1, 10, []string{"SET", recKey, "tokB2", "PX", "200", "NX"})
	release(1, 700, 100, "tokB2")
	return b
}

// A node's record keeps its order across a jump back of its clock: the
// commands before the jump are attributed as before it, and the ones after
// it to the holds they belong to, whole or streamed in small windows. A
// history written before the markers keeps the order too (its commands
// after the jump get the time of the last one before: late, not
// reordered).
func TestRecordKeepsNodeOrderAcrossJumpBack(t *testing.T) {
	for _, marked := range []bool{true, false} {
		b := jumpBack(marked)
		r := Check(b.ev, Options{})
		if u := r.Checks[CheckUnlock]; u.Verdict != Valid || u.Violations != 0 {
			t.Errorf("marked %v: unlock %s with %d violations (%+v), want valid: a correct lock was blamed across the jump", marked, u.Verdict, u.Violations, r.Violations)
		}
		t.Setenv(CompareEnv, "1")
		p := writeHistory(t, filepath.Join(t.TempDir(), history.CompactFile), b.ev)
		if rs, err := CheckFile(p, Options{batch: 3}); err != nil || rs.Checks[CheckUnlock].Verdict != Valid {
			t.Errorf("marked %v, streamed: %v, %+v", marked, err, rs.Checks[CheckUnlock])
		}
	}
}

// After a jump forward the record's stamps run ahead of the clients'
// times: a foreign DEL after the jump is still matched to the hold whose
// key it deleted (on server time the hold that wrote the key is not found,
// and the DEL went unblamed).
func TestRecordJumpForwardFindsForeignDel(t *testing.T) {
	b := recordHB()
	b.acq(0, 0, 2, 201, history.OK, 1).cmd(0, 1, []string{"SET", recKey, "tokA", "PX", "200", "NX"})
	b.clockMark(100, 1000, 1)
	// Client 0's key expired by the jump (stamp 1101 > 201): client 1
	// takes it, and client 0's plain DEL removes it.
	b.acq(1, 100, 102, 302, history.OK, 1).cmd(1, 1101, []string{"SET", recKey, "tokB", "PX", "200", "NX"})
	b.rel(0, 149, 151, 0).cmd(0, 1150, []string{"DEL", recKey})
	b.rel(1, 199, 201, 0).cmd(1, 1200, []string{"EVALSHA", "sha", "1", recKey, "tokB"}, []string{"GET", recKey})
	r := Check(b.ev, Options{})
	var found []Violation
	for _, v := range r.Violations {
		if v.Check == CheckUnlock {
			found = append(found, v)
		}
	}
	if len(found) != 1 || found[0].Clients[0] != 0 || found[0].Clients[1] != 1 || !strings.Contains(found[0].Detail, "its DEL, in the server's command record") {
		t.Fatalf("unlock violations %+v: want one, client 0's DEL of client 1's key after the jump", found)
	}
}

// The replay counts a key's expiry on its node's clock: after a jump back
// the key lives longer at the server, and a SET NX that the harness's
// clock would put past the TTL found it there.
func TestRecordExpiryOnServerClock(t *testing.T) {
	b := recordHB()
	b.acq(0, 100, 102, 301, history.OK, 1).cmd(0, 101, []string{"SET", recKey, "tokA", "PX", "200", "NX"})
	b.clockMark(150, -600, 1)
	// At 310 ms by the harness (stamp -290), 9 ms past the TTL on the
	// harness's clock; at the server the key expires at stamp 301.
	b.cmd(1, -290, []string{"SET", recKey, "tokB", "PX", "200", "NX"})
	st := NewStream(Options{})
	for i := range b.ev {
		st.Add(&b.ev[i])
	}
	st.Result()
	m := st.m
	k, ok := m.keyIdx["k"]
	if !ok {
		t.Fatal("no key k in the model")
	}
	s := m.kd[k].state[m.node("n1")]
	if s == nil || !s.present || s.owner != 0 {
		t.Fatalf("state after the jump %+v: want client 0's key still there (the SET NX refused)", s)
	}
}

// A node's clock: a command's harness time from its stamp through the
// marker before it (offset, rate), never before the node's previous
// command; and back.
func TestNodeClock(t *testing.T) {
	nc := &nodeClock{lastH: -1 << 62}
	if h := nc.harness(50 * ms); h != 50*ms {
		t.Errorf("no marker: harness %d, want the stamp", h)
	}
	nc.segs = append(nc.segs, clockSeg{t: 100 * ms, off: -600 * ms, rate: 1})
	if h := nc.harness(-490 * ms); h != 110*ms {
		t.Errorf("after a jump back: harness %d, want 110 ms", h)
	}
	if s := nc.server(120 * ms); s != -480*ms {
		t.Errorf("server at 120 ms: %d, want -480 ms", s)
	}
	if s := nc.server(90 * ms); s != 90*ms {
		t.Errorf("server before the marker: %d, want 90 ms", s)
	}
	// A stamp that would put the command before the previous one keeps
	// the order.
	if h := nc.harness(-500 * ms); h != 110*ms {
		t.Errorf("a stamp behind: harness %d, want the previous command's 110 ms", h)
	}
	// Drift: from 200 ms (offset -600 ms there) the clock runs 3× fast.
	nc.segs = append(nc.segs, clockSeg{t: 200 * ms, off: -600 * ms, rate: 3})
	if s := nc.server(300 * ms); s != -100*ms {
		t.Errorf("server at 300 ms at rate 3: %d, want -100 ms", s)
	}
	if h := nc.harness(-100 * ms); h != 300*ms {
		t.Errorf("harness of stamp -100 ms at rate 3: %d, want 300 ms", h)
	}
}
