package checker

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// libKey is the key a library that prefixes its own name writes for recKey.
const libKey = "lock.p:{k}"

// keys: client c's lock reported that it wrote key for "k" (OpKeys).
func (b *hb) keys(c int, t int64, key string) *hb {
	return b.add(history.Event{T: t * ms, Client: c, Key: "k", Op: history.OpKeys, Detail: key})
}

// renamedGetDel is getDel's story with a lock that writes libKey instead
// of the key it is given: client 0's lease expires, client 1 takes the
// key, and client 0's late owner-less DEL of libKey removes client 1's
// lock. report: the lock reports its key (OpKeys) at each client's first
// acquire.
func renamedGetDel(report bool) *hb {
	b := recordHB()
	if report {
		b.keys(0, 1, libKey)
	}
	b.acq(0, 0, 1, 101, history.OK, 1).cmd(0, 1, []string{"SET", libKey, "tokA", "PX", "100", "NX"}).read(0, 2, 0).write(0, 3, 4, 1, 0, true)
	b.cmd(2, 60, []string{"SET", libKey, "tokC", "PX", "100", "NX"}) // refused: A holds it
	if report {
		b.keys(1, 110, libKey)
	}
	b.acq(1, 90, 110, 210, history.OK, 1).cmd(1, 109, []string{"SET", libKey, "tokB", "PX", "100", "NX"}).read(1, 111, 1)
	b.cmd(0, 148, []string{"GET", libKey}).rel(0, 148, 151, 0).cmd(0, 150, []string{"DEL", libKey})
	b.write(1, 170, 171, 2, 0, true).rel(1, 172, 173, 0)
	b.cmd(1, 172, []string{"EVALSHA", "sha", "1", libKey, "tokB"}, []string{"GET", libKey})
	return b
}

// wantForeignDel: the unlock check found client 0's DEL of client 1's key.
func wantForeignDel(t *testing.T, r *Result) {
	t.Helper()
	wantVerdicts(t, r, map[string]Verdict{CheckUnlock: Invalid})
	var found []Violation
	for _, v := range r.Violations {
		if v.Check == CheckUnlock {
			found = append(found, v)
		}
	}
	if len(found) != 1 || found[0].Clients[0] != 0 || found[0].Clients[1] != 1 || found[0].Cause != CauseNonOwnerDel || found[0].Key != "k" {
		t.Fatalf("unlock violations %+v: want one, client 0's DEL of client 1's k", found)
	}
	if !hasNote(r, "lock.{k}") {
		t.Errorf("notes %q: want one naming the mapped key", r.Notes)
	}
}

func hasNote(r *Result, sub string) bool {
	for _, n := range r.Notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

// A lock that names its own key and reports it: the DEL of its key by a
// non-owner is a DEL of the lock key (issue 40; the old checker read
// nothing of lock.p:{k} and said valid).
func TestKeyMapReportedKeys(t *testing.T) {
	b := renamedGetDel(true)
	wantForeignDel(t, Check(b.ev, Options{}))
	// Streamed in small windows: the same.
	t.Setenv(CompareEnv, "1")
	p := writeHistory(t, filepath.Join(t.TempDir(), history.CompactFile), b.ev)
	rs, err := CheckFile(p, Options{batch: 3})
	if err != nil {
		t.Fatal(err)
	}
	wantForeignDel(t, rs)
}

// The same lock reporting nothing: the mapping is learned from the
// record, the key each client's own connection wrote during its acquire.
func TestKeyMapLearnedFromOwnWrites(t *testing.T) {
	b := renamedGetDel(false)
	wantForeignDel(t, Check(b.ev, Options{}))
	// With the record set aside nothing is learned, and nothing of the
	// lock's key is seen: no verdict.
	if r := Check(b.ev, Options{NoCommandRecord: true}); r.Checks[CheckUnlock].Verdict == Valid {
		t.Errorf("record set aside: unlock valid")
	}
	t.Setenv(CompareEnv, "1")
	p := writeHistory(t, filepath.Join(t.TempDir(), history.CompactFile), b.ev)
	rs, err := CheckFile(p, Options{batch: 3})
	if err != nil {
		t.Fatal(err)
	}
	wantForeignDel(t, rs)
}

// A key another client wrote during an acquire teaches nothing, nor does
// one written by a lock that wrote its own key too (a fence counter, a
// queue): only the acquiring client's writes of a key no one acquires,
// from an acquire that wrote none of its own key.
func TestKeyMapLearnsOnlyOwnStrayWrites(t *testing.T) {
	b := recordHB()
	b.acq(0, 0, 1, 101, history.OK, 1).cmd(0, 1, []string{"SET", recKey, "tokA", "PX", "100", "NX"}).cmd(0, 1, []string{"SET", "p:{k}:queue", "x"})
	b.cmd(1, 1, []string{"SET", libKey, "tokZ"})
	b.rel(0, 50, 51, 0).cmd(0, 50, []string{"EVALSHA", "sha", "1", recKey, "tokA"}, []string{"GET", recKey}, []string{"DEL", recKey})
	b.acq(1, 60, 61, 161, history.OK, 1).cmd(1, 61, []string{"SET", recKey, "tokB", "PX", "100", "NX"})
	b.cmd(0, 70, []string{"DEL", libKey}).cmd(0, 71, []string{"DEL", "p:{k}:queue"})
	b.rel(1, 90, 91, 0).cmd(1, 90, []string{"EVALSHA", "sha", "1", recKey, "tokB"}, []string{"GET", recKey}, []string{"DEL", recKey})
	r := Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckUnlock: Valid})
	if hasNote(r, "names its own keys") {
		t.Errorf("notes %q: a mapping learned from a lock that writes its own key", r.Notes)
	}
}

// A rueidislock-style key (the library's prefix and the run's around the
// lock key) expiring under a holder that still believes it holds the
// lock is a loss of the lock key (the old checker counted 0: the expiry
// was recorded on rueidislock:0:{k}).
func TestKeyMapLossOfLibraryKey(t *testing.T) {
	const rk = "p:rueidislock:0:p:{k}"
	b := newHB(map[string]any{history.MetaKeyPrefix: "p:"})
	obs := func(t int64, what string) {
		b.add(history.Event{T: t * ms, Client: -1, Key: "rueidislock:0:{k}", Op: history.OpServer, Node: "n1", Detail: what})
	}
	b.keys(0, 1, rk).acq(0, 0, 1, 0, history.OK, 1)
	obs(1, "set")
	b.read(0, 2, 0).write(0, 3, 4, 1, 0, true)
	obs(150, "expired")
	b.read(0, 290, 1).rel(0, 300, 301, 0)
	r := Check(b.ev, Options{})
	ld := r.LossDetection
	if ld == nil || ld.Losses != 1 || ld.Released != 1 {
		t.Fatalf("loss detection %+v (notes %q): want the expiry at 150 ms counted as a loss of k", ld, r.Notes)
	}
}

// No evidence, no verdict: a lock whose keys the servers' record never
// names (it writes keys of its own and neither reports them nor writes
// them from its named connection) gets unknown from the unlock check, with
// the reason, not valid; and loss detection is not measured.
func TestKeyMapNoLockKeySeenIsUnknown(t *testing.T) {
	b := recordHB()
	b.acq(0, 0, 1, 101, history.OK, 1).write(0, 3, 4, 1, 0, true).rel(0, 10, 11, 0)
	b.acq(1, 20, 21, 121, history.OK, 1).write(1, 23, 24, 2, 0, true).rel(1, 30, 31, 0)
	b.cmd(-1, 40, []string{"SET", "p:other", "x"}) // the record runs, on other keys
	r := Check(b.ev, Options{})
	wantVerdicts(t, r, map[string]Verdict{CheckUnlock: Unknown})
	if !hasNote(r, "report them (`keys` in `acquired`") {
		t.Errorf("notes %q: want the reason", r.Notes)
	}
	if r.LossDetection != nil {
		t.Errorf("loss detection %+v: want not measured", r.LossDetection)
	}
}

// No evidence, no verdict, for every check: each check run on a history
// stripped of the events it judges answers unknown or does not apply,
// never valid. A check added to the table (checks) needs its row here.
func TestNoCheckValidWithoutEvidence(t *testing.T) {
	// cycles: two clients' correct cycles, each acquire's SET in the
	// record, under the scheduled fault that fired.
	cycles := func(b *hb, write, record bool) *hb {
		for i, c := range []int{0, 1} {
			t0 := int64(i) * 20
			b.acq(c, t0, t0+1, t0+101, history.OK, 1)
			if record {
				b.cmd(c, t0+1, []string{"SET", recKey, "tok" + string(rune('A'+i)), "PX", "100", "NX"})
			}
			if write {
				b.read(c, t0+2, int64(i)).write(c, t0+3, t0+4, int64(i+1), 0, true)
			}
			b.rel(c, t0+8, t0+9, 0)
			if record {
				b.cmd(c, t0+8, []string{"DEL", recKey})
			}
		}
		return b
	}
	stripped := map[string]func() *hb{
		// No hold at all: every acquire failed.
		CheckMutex: func() *hb {
			return recordHB().acq(0, 0, 1, 0, history.Fail, 0).acq(1, 2, 3, 0, history.Fail, 0)
		},
		// Holds, but no write reached the resource.
		CheckResource: func() *hb { return cycles(recordHB(), false, true) },
		// Holds without fencing tokens.
		CheckFencing: func() *hb { return cycles(recordHB(), true, true) },
		// Holds, a record that runs, and nothing on the lock's keys in it.
		CheckUnlock: func() *hb {
			return cycles(recordHB(), true, false).cmd(-1, 50, []string{"SET", "p:other", "x"})
		},
		// No re-entry.
		CheckReentrancy: func() *hb { return cycles(recordHB(), true, true) },
		// No acquire attempt.
		CheckLiveness: func() *hb { return recordHB().read(0, 1, 0) },
		// A scheduled fault that never fired.
		CheckFaults: func() *hb {
			return cycles(newHB(map[string]any{history.MetaCommandRecord: "monitor", history.MetaKeyPrefix: "p:",
				history.MetaFaultsScheduled: []any{map[string]any{"id": 1.0, "kind": history.FaultPauseClient, "at_ms": 5.0}}}), true, true)
		},
	}
	for _, ck := range checks {
		build, ok := stripped[ck.name]
		if !ok {
			t.Errorf("check %s has no stripped history in this test", ck.name)
			continue
		}
		for _, o := range []Options{{}, {NoCommandRecord: true}} {
			r := Check(build().ev, o)
			if res, ran := r.Checks[ck.name]; ran && res.Verdict == Valid {
				t.Errorf("%s (no record: %v) on a history without what it judges: valid (%+v, notes %q)", ck.name, o.NoCommandRecord, res, r.Notes)
			}
		}
	}
	// Nothing but the run's first line: no check says valid, nor the run.
	if r := Check(recordHB().ev, Options{}); r.Verdict == Valid {
		t.Errorf("an empty history: %s (%+v)", r.Verdict, r.Checks)
	}
}
