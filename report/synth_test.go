package report

import (
	"bufio"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// writeHistory writes events as history.jsonl into dir and returns its path.
func writeHistory(t testing.TB, dir string, evs []history.Event) string {
	t.Helper()
	path := filepath.Join(dir, "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i := range evs {
		if err := enc.Encode(&evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// synth generates a plausible contended-mutex history: clients take turns
// on keys, waiters queue up, a pause-client fault freezes a holder until its
// lease expires and another client takes the key (a mutex violation), and
// the observer records the key's set/del/expired events.
type synth struct {
	rng     *rand.Rand
	clients int
	keys    int
	emit    func(*history.Event)
	events  int
}

const ms = int64(1_000_000)
const us = int64(1_000)

func (s *synth) run(durationNS int64, maxEvents int) (violWindow [2]int64, violKey string, violClients []int) {
	var last int64
	e := func(ev history.Event) {
		s.emit(&ev)
		s.events++
		last = max(last, ev.T, ev.End)
	}
	e(history.Event{Client: -1, Op: history.OpRun, Meta: map[string]any{
		"scenario": "synthetic", "lock": "simple", "backend": "embedded", "topology": "single",
		"seed": 7, "ttl_ms": 30, "clients": s.clients, "keys": s.keys}})
	e(history.Event{T: 1 * ms, Client: -1, Op: history.OpPhase, Detail: "workload"})
	type keyState struct {
		free   int64 // when the current holder invokes release
		holder int
		token  int
	}
	ks := make([]keyState, s.keys)
	for i := range ks {
		ks[i] = keyState{free: 1*ms + int64(i)*100*us, holder: -1}
	}
	faultAt, faultDone := durationNS/3, false
	for s.events < maxEvents {
		k := 0
		for i := range ks {
			if ks[i].free < ks[k].free {
				k = i
			}
		}
		st := &ks[k]
		if st.free > durationNS {
			break
		}
		key := "k" + string(rune('0'+k))
		rel := st.free
		// Previous holder releases (invoke at rel, ack shortly after).
		if st.holder >= 0 {
			e(history.Event{T: rel + 2*us, Client: -1, Op: history.OpServer, Key: key, Node: "n1", Detail: "del"})
			e(history.Event{T: rel, End: rel + 60*us + s.rng.Int64N(80*us), Client: st.holder, Key: key, Op: history.OpRelease, Result: history.OK})
		}
		next := s.rng.IntN(s.clients)
		if next == st.holder {
			next = (next + 1) % s.clients
		}
		// Occasionally a TryAcquire elsewhere fails.
		if s.rng.IntN(8) == 0 {
			c := (next + 1) % s.clients
			ft := rel - 300*us
			e(history.Event{T: ft, End: ft + 90*us, Client: c, Key: key, Op: history.OpAcquire, Result: history.Fail})
		}
		wait := 200*us + s.rng.Int64N(3*ms)
		hand := 80*us + s.rng.Int64N(150*us)
		if s.rng.IntN(200) == 0 {
			hand += s.rng.Int64N(20 * ms) // a slow tail
		}
		ack := rel + hand
		st.token++
		e(history.Event{T: rel + hand - 20*us, Client: -1, Op: history.OpServer, Key: key, Node: "n1", Detail: "set"})
		e(history.Event{T: rel - wait, End: ack, Client: next, Key: key, Op: history.OpAcquire, Result: history.OK,
			Depth: 1, Fence: uint64(st.token), Deadline: ack + 30*ms})
		hold := 300*us + s.rng.Int64N(1500*us)
		e(history.Event{T: ack + 10*us, End: ack + 50*us, Client: next, Key: key, Op: history.OpRead, Value: int64(st.token)})
		if !faultDone && ack > faultAt {
			// The holder is paused past its TTL; the key expires and another
			// client takes it while the paused one still believes it holds.
			faultDone = true
			p0, p1 := ack+100*us, ack+60*ms
			e(history.Event{T: p0, Client: -1, Op: history.OpFault, Fault: &history.Fault{ID: 0, Kind: "pause-client",
				Target: "client " + itoa(next), Request: map[string]string{"duration": "60ms"}, Applied: true,
				Effect: map[string]string{"paused": "true"}}})
			e(history.Event{T: ack + 30*ms, Client: -1, Op: history.OpServer, Key: key, Node: "n1", Detail: "expired"})
			other := (next + 1) % s.clients
			oack := ack + 32*ms
			e(history.Event{T: ack + 31*ms, Client: -1, Op: history.OpServer, Key: key, Node: "n1", Detail: "set"})
			e(history.Event{T: ack + 5*ms, End: oack, Client: other, Key: key, Op: history.OpAcquire, Result: history.OK, Depth: 1, Deadline: oack + 30*ms})
			e(history.Event{T: ack + 45*ms, Client: -1, Op: history.OpServer, Key: key, Node: "n1", Detail: "del"})
			e(history.Event{T: ack + 45*ms, End: ack + 45*ms + 70*us, Client: other, Key: key, Op: history.OpRelease, Result: history.OK})
			e(history.Event{T: p0, End: p1, Client: next, Key: key, Op: history.OpPause, Detail: "in-hold"})
			e(history.Event{T: p1 + 10*us, Client: -1, Op: history.OpHeal, Fault: &history.Fault{ID: 0, Kind: "pause-client", Applied: true}})
			e(history.Event{T: p1 + 20*us, End: p1 + 60*us, Client: next, Key: key, Op: history.OpWrite, Value: int64(st.token), Result: history.OK})
			violWindow, violKey, violClients = [2]int64{oack, ack + 45*ms}, key, []int{next, other}
			st.free = p1 + 100*us
			st.holder = next
			continue
		}
		e(history.Event{T: ack + hold - 60*us, End: ack + hold - 20*us, Client: next, Key: key, Op: history.OpWrite, Value: int64(st.token) + 1, Result: history.OK})
		st.free = ack + hold
		st.holder = next
	}
	e(history.Event{T: last + 1*ms, Client: -1, Op: history.OpPhase, Detail: "heal"})
	return
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// synthRun writes a synthetic history with about n events.
func synthRun(t testing.TB, dir string, n int) (path string, v checker.Violation) {
	t.Helper()
	path = filepath.Join(dir, "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	s := &synth{rng: rand.New(rand.NewPCG(7, 7)), clients: 8, keys: 2, emit: func(e *history.Event) {
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}}
	// ~7 events per cycle, a cycle every ~1.9ms per key on 2 keys.
	dur := int64(n) * 1_900_000 / 7 / 2
	win, key, clients := s.run(dur, n)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	v = checker.Violation{Check: "mutex", Key: key, Clients: clients, AtMS: history.MS(win[0]), Window: win,
		Cause: "expired during pause", Detail: "two clients believed they held " + key,
		Explanation: "client paused past its lease; the key expired and another client acquired it while the paused one still believed it held it"}
	return path, v
}
