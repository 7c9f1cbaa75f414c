package checker

import (
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// recordHistory writes a contention history with its command record, in
// the compact form runs write: cycles of 50 clients on 50 keys, each an
// acquire with its SET NX, a release with its script (EVALSHA: GET, DEL,
// PUBLISH) and, every other cycle, another client's refused SET NX with a
// token of its own; every token is new, as a lock's are. In the last
// cycle another client's DEL removes the holder's key: the one violation.
// It returns the path and how many command events it holds.
func recordHistory(tb testing.TB, cycles int) (string, int) {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), history.CompactFile)
	w, err := history.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	const clients, keys = 50, 50
	const prefix = "lc:r:"
	w.Append(&history.Event{Op: history.OpRun, Client: -1, Meta: map[string]any{history.MetaTTLms: 100, history.MetaHonours: true,
		history.MetaTopology: "single", history.MetaResource: "counter", history.MetaCommandRecord: "monitor",
		history.MetaKeyPrefix: prefix, history.MetaStartNS: 0}})
	r := rand.New(rand.NewPCG(5, 6))
	token := func() string {
		var b [16]byte
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return hex.EncodeToString(b[:])
	}
	names, full := make([]string, keys), make([]string, keys)
	for k := range names {
		names[k] = "k" + itoa(k)
		full[k] = prefix + "{" + names[k] + "}"
	}
	cmd := func(c int, t int64, key string, args []string, inner ...[]string) {
		w.Append(&history.Event{T: t, Client: c, Key: key, Op: history.OpCommand, Node: "n1",
			Cmd: &history.Command{Conn: "127.0.0.1:" + itoa(40000+c), Name: "lc-r-c" + itoa(c), Args: args, Inner: inner}})
	}
	free := make([]int64, keys) // when each key is free again
	now := make([]int64, clients)
	n := 0
	// last: the node's last command so far. A node's record is in the order
	// it ran its commands (the replay never reorders a node), so each
	// cycle's commands come after the previous cycle's.
	var last int64
	for i := 0; i < cycles; i++ {
		c, k := r.IntN(clients), r.IntN(keys)
		t := max(now[c], free[k], last)/1000*1000 + 1000 // the record's times are whole µs
		last = t + 450_000
		tok := token()
		cmd(c, t+50_000, names[k], []string{"set", full[k], tok, "px", "100", "nx"})
		w.Append(&history.Event{T: t, End: t + 100_000, Client: c, Key: names[k], Op: history.OpAcquire, Result: history.OK, Token: tok, Depth: 1, Deadline: t + 100e6})
		n++
		if i%2 == 0 {
			cmd((c+1)%clients, t+60_000, names[k], []string{"set", full[k], token(), "px", "100", "nx"})
			n++
		}
		if i == cycles-1 {
			cmd((c+2)%clients, t+200_000, names[k], []string{"DEL", full[k]})
			n++
		}
		cmd(c, t+450_000, names[k], []string{"evalsha", "ba7d080aad9d06f0b74db2ac05e42e5263ff478d", "2", full[k], "lockchaos:released:" + full[k], tok},
			[]string{"GET", full[k]}, []string{"DEL", full[k]}, []string{"PUBLISH", "lockchaos:released:" + full[k], "1"})
		w.Append(&history.Event{T: t + 400_000, End: t + 500_000, Client: c, Key: names[k], Op: history.OpRelease, Token: tok, Result: history.OK})
		n++
		free[k], now[c] = t+500_000, t+600_000
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return p, n
}

func itoa(i int) string {
	b := []byte{}
	if i == 0 {
		return "0"
	}
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// A streamed check of a history with its command record holds its memory
// whatever the history's length (issue 33: the replay's token tables and
// per-key commands grew with the run, to 660 MB for 60 s of 50 clients).
// 2.5 million command events are checked in windows of 64k events; after
// each window the live heap (after a GC) stays under the bound, where
// keeping every token took over 200 MiB by the end.
func TestCommandRecordBoundedMemory(t *testing.T) {
	if os.Getenv("LOCKCHAOS_LONG") == "" {
		t.Skip("long tier: LOCKCHAOS_LONG=1 runs it (scripts/test.sh does)")
	}
	const cycles = 1_000_000
	p, cmds := recordHistory(t, cycles)
	const bound = 64 << 20
	st := NewStream(Options{batch: 1 << 16})
	var peak uint64
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
		return ms.HeapAlloc
	}
	windows, seen := 0, 0
	if _, err := history.ScanFile(p, func(e *history.Event) error {
		if e.Op == history.OpCommand {
			seen++
		}
		st.Add(e)
		if st.Windows != windows {
			windows = st.Windows
			if h := heap(); h > bound {
				t.Fatalf("after window %d (%d command events of %d read): live heap %d MiB, over %d MiB", windows, seen, cmds, h>>20, bound>>20)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r := st.Result()
	heap()
	t.Logf("%d command events (%d events) in %d windows: live heap at most %d MiB", seen, r.Events, st.Windows, peak>>20)
	if seen != cmds || st.Windows < 20 {
		t.Fatalf("%d command events read of %d, %d windows: the history is not what the test meant", seen, cmds, st.Windows)
	}
	// The replay read the record to its end: the DEL in the last cycle is
	// the one violation, and nothing else is found.
	if r.OwnershipSource != SourceCommandRecord || st.Inexact() != "" || r.Checks[CheckMutex].Verdict != Valid ||
		r.Checks[CheckUnlock].Verdict != Invalid || len(r.Violations) != 1 || r.Violations[0].Cause != CauseNonOwnerDel {
		t.Fatalf("ownership source %q, inexact %q, checks %+v, violations %+v: want an exact check from the command record finding the last cycle's DEL alone",
			r.OwnershipSource, st.Inexact(), r.Checks, r.Violations)
	}
	if peak > bound {
		t.Fatalf("live heap %d MiB at the end, over %d MiB", peak>>20, bound>>20)
	}
}

// A window's pruning drops the tokens behind its cut, and where nodes have
// replicas keeps them 10 s longer (a replica's copy names its writer by
// the token).
func TestPruneTokens(t *testing.T) {
	for _, c := range []struct {
		topo string
		kept []string
	}{
		{"single", []string{"late"}},
		{"independent", []string{"late"}},
		{"sentinel", []string{"mid", "late"}},
	} {
		m := newModel()
		m.topo = c.topo
		m.tokAcq = map[string]tokResult{"early": {history.OK, 1e9, 0}, "mid": {history.OK, 15e9, 0}, "late": {history.Fail, 21e9, 0}}
		m.tokOwner = map[string]tokWriter{"early": {1, 1e9}, "mid": {2, 15e9}, "late": {3, 21e9}}
		m.pruneTokens(20e9)
		for _, tok := range []string{"early", "mid", "late"} {
			want := slices.Contains(c.kept, tok)
			if _, ok := m.tokAcq[tok]; ok != want {
				t.Errorf("%s: acquire token %s kept %v, want %v", c.topo, tok, ok, want)
			}
			if _, ok := m.tokOwner[tok]; ok != want {
				t.Errorf("%s: writer token %s kept %v, want %v", c.topo, tok, ok, want)
			}
		}
	}
}
