package metrics

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// ms and us in the history's nanoseconds.
const (
	ms = int64(1_000_000)
	us = int64(1_000)
)

func acq(c int, key string, t, end int64, res history.Result, depth int) history.Event {
	return history.Event{T: t, End: end, Client: c, Key: key, Op: history.OpAcquire, Result: res, Depth: depth}
}

func rel(c int, key string, t, end int64, depth int) history.Event {
	return history.Event{T: t, End: end, Client: c, Key: key, Op: history.OpRelease, Result: history.OK, Depth: depth}
}

func runEv(clients int) history.Event {
	return history.Event{Client: -1, Op: history.OpRun, Meta: map[string]any{"scenario": "t", "lock": "simple", "clients": clients}}
}

func phaseEv(t int64, p string) history.Event {
	return history.Event{T: t, Client: -1, Op: history.OpPhase, Detail: p}
}

// near reports whether got is within the histograms' resolution of want:
// three significant digits, and 512ns steps below ~1ms (the lowest
// discernible value is 1µs).
func near(got, want float64) bool { return math.Abs(got-want) <= want*2e-3+0.6 }

func TestAnalyze(t *testing.T) {
	type want struct {
		cycles, workloadCycles int64
		throughput             float64
		fairness               float64
		perClient              []int64
		acquires, releases     Counts
		handoffs               []float64 // µs: count and max/min checked
		cycleMaxUS             float64
	}
	tests := []struct {
		name string
		evs  []history.Event
		want want
	}{
		{
			name: "hand-off, waiter acked after the release",
			evs: []history.Event{
				runEv(2), phaseEv(0, "workload"),
				acq(0, "k", 0, 1*ms, history.OK, 1),
				rel(0, "k", 10*ms, 10*ms+200*us, 0),
				acq(1, "k", 500*us, 11*ms, history.OK, 1), // waiting since 0.5ms
				rel(1, "k", 20*ms, 20*ms+500*us, 0),
				acq(0, "k", 21*ms, 21*ms+500*us, history.OK, 1), // not waiting: no hand-off
				rel(0, "k", 30*ms, 30*ms+500*us, 0),
				phaseEv(40*ms, "heal"),
				acq(1, "k", 41*ms, 41*ms+100*us, history.OK, 1),
				rel(1, "k", 45*ms, 45*ms+200*us, 0),
			},
			want: want{cycles: 4, workloadCycles: 3, throughput: 3 / 0.040, fairness: 1, perClient: []int64{2, 2},
				acquires: Counts{OK: 4}, releases: Counts{OK: 4}, handoffs: []float64{1000}, cycleMaxUS: 20000},
		},
		{
			name: "hand-off, waiter acked before the releaser's ack is appended",
			evs: []history.Event{
				runEv(2), phaseEv(0, "workload"),
				acq(0, "k", 0, 1*ms, history.OK, 1),
				acq(1, "k", 500*us, 11*ms, history.OK, 1),
				rel(0, "k", 10*ms, 12*ms, 0),
				rel(1, "k", 20*ms, 20*ms+500*us, 0),
				phaseEv(40*ms, "heal"),
			},
			want: want{cycles: 2, workloadCycles: 2, throughput: 2 / 0.040, fairness: 1, perClient: []int64{1, 1},
				acquires: Counts{OK: 2}, releases: Counts{OK: 2}, handoffs: []float64{1000}, cycleMaxUS: 20000},
		},
		{
			name: "the releaser takes the key again first: the waiter's hand-off counts from the second release",
			evs: []history.Event{
				runEv(2), phaseEv(0, "workload"),
				acq(0, "k", 0, 1*ms, history.OK, 1),
				rel(0, "k", 10*ms, 10*ms+100*us, 0),
				acq(0, "k", 10*ms+500*us, 10*ms+600*us, history.OK, 1),
				rel(0, "k", 19*ms, 19*ms+100*us, 0),
				acq(1, "k", 1*ms, 20*ms, history.OK, 1),
				rel(1, "k", 30*ms, 30*ms+100*us, 0),
				phaseEv(50*ms, "heal"),
			},
			want: want{cycles: 3, workloadCycles: 3, throughput: 3 / 0.050, fairness: 0.9, perClient: []int64{2, 1},
				acquires: Counts{OK: 3}, releases: Counts{OK: 3}, handoffs: []float64{1000}, cycleMaxUS: 29100},
		},
		{
			name: "reentrant holds are one cycle; failed and unknown acquires count; idle clients lower fairness",
			evs: []history.Event{
				runEv(4), phaseEv(0, "workload"),
				acq(0, "k", 0, 1*ms, history.OK, 1),
				acq(0, "k", 2*ms, 2*ms+100*us, history.OK, 2),
				rel(0, "k", 3*ms, 3*ms+100*us, 1),
				acq(1, "k", 3*ms, 3*ms+50*us, history.Fail, 0),
				rel(0, "k", 4*ms, 4*ms+100*us, 0),
				acq(1, "j", 5*ms, 0, history.Unknown, 0),
				acq(1, "k", 6*ms, 7*ms, history.OK, 1),
				rel(1, "k", 8*ms, 9*ms, 0),
				phaseEv(10*ms, "heal"),
			},
			// Jain over [1, 1, 0, 0] = 4 / (4·2) = 0.5
			want: want{cycles: 2, workloadCycles: 2, throughput: 200, fairness: 0.5, perClient: []int64{1, 1, 0, 0},
				acquires: Counts{OK: 2, Fail: 1, Unknown: 1}, releases: Counts{OK: 2}, cycleMaxUS: 4100},
		},
		{
			name: "no phase events: throughput over first client event .. last event",
			evs: []history.Event{
				runEv(1),
				acq(0, "k", 10*ms, 11*ms, history.OK, 1),
				rel(0, "k", 20*ms, 21*ms, 0),
				acq(0, "k", 22*ms, 23*ms, history.OK, 1),
				rel(0, "k", 29*ms, 30*ms, 0),
			},
			want: want{cycles: 2, workloadCycles: 2, throughput: 2 / 0.020, fairness: 1, perClient: []int64{2},
				acquires: Counts{OK: 2}, releases: Counts{OK: 2}, cycleMaxUS: 11000},
		},
		{
			name: "an acquire never released is not a cycle",
			evs: []history.Event{
				runEv(1), phaseEv(0, "workload"),
				acq(0, "k", 0, 1*ms, history.OK, 1),
				phaseEv(10*ms, "heal"),
			},
			want: want{fairness: 1, perClient: []int64{1}, acquires: Counts{OK: 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeHistory(t, t.TempDir(), tc.evs)
			a, err := Analyze(path, AnalyzeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			st, w := a.Stats, tc.want
			if st.Cycles != w.cycles || st.WorkloadCycles != w.workloadCycles {
				t.Errorf("cycles = %d (workload %d), want %d (%d)", st.Cycles, st.WorkloadCycles, w.cycles, w.workloadCycles)
			}
			if math.Abs(st.Throughput-w.throughput) > 1e-9 {
				t.Errorf("throughput = %v, want %v", st.Throughput, w.throughput)
			}
			if math.Abs(st.Fairness-w.fairness) > 1e-9 {
				t.Errorf("fairness = %v, want %v", st.Fairness, w.fairness)
			}
			if len(st.PerClient) != len(w.perClient) {
				t.Fatalf("per client = %v, want %v", st.PerClient, w.perClient)
			}
			for i := range w.perClient {
				if st.PerClient[i] != w.perClient[i] {
					t.Errorf("per client = %v, want %v", st.PerClient, w.perClient)
				}
			}
			if st.Acquires != w.acquires || st.Releases != w.releases {
				t.Errorf("acquires %+v releases %+v, want %+v %+v", st.Acquires, st.Releases, w.acquires, w.releases)
			}
			h := st.LatencyUS[OpHandoff]
			if h.Count != int64(len(w.handoffs)) {
				t.Errorf("handoffs = %d, want %d", h.Count, len(w.handoffs))
			}
			if len(w.handoffs) > 0 && !near(h.Max, w.handoffs[len(w.handoffs)-1]) {
				t.Errorf("handoff max = %vµs, want %vµs", h.Max, w.handoffs[len(w.handoffs)-1])
			}
			if c := st.LatencyUS[OpCycle]; w.cycleMaxUS > 0 && !near(c.Max, w.cycleMaxUS) {
				t.Errorf("cycle max = %vµs, want %vµs", c.Max, w.cycleMaxUS)
			}
		})
	}
}

func TestAnalyzeLatencySummary(t *testing.T) {
	evs := []history.Event{runEv(1), phaseEv(0, "workload")}
	// 100 acquires of 1..100 ms.
	at := int64(0)
	for i := int64(1); i <= 100; i++ {
		evs = append(evs, acq(0, "k", at, at+i*ms, history.OK, 1), rel(0, "k", at+i*ms, at+i*ms+100*us, 0))
		at += i*ms + 200*us
	}
	a, err := Analyze(writeHistory(t, t.TempDir(), evs), AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := a.Stats.LatencyUS[OpAcquire]
	if l.Count != 100 || !near(l.P50, 50000) || !near(l.P90, 90000) || !near(l.P99, 99000) || !near(l.Max, 100000) || !near(l.Mean, 50500) {
		t.Errorf("acquire latency = %+v", l)
	}
	if r := a.Stats.LatencyUS[OpRelease]; r.Count != 100 || !near(r.P50, 100) {
		t.Errorf("release latency = %+v", r)
	}
}

func TestAnalyzeFaultsSeriesSamples(t *testing.T) {
	evs := []history.Event{runEv(1), phaseEv(0, "workload"),
		{T: 5 * ms, Client: -1, Op: history.OpFault, Fault: &history.Fault{ID: 3, Kind: "kill-node", Target: "n1", Applied: true,
			Request: map[string]string{"restart": "empty"}, Effect: map[string]string{"pid": "42"}}},
	}
	at := int64(0)
	for i := 0; i < 40; i++ {
		evs = append(evs, acq(0, "k", at, at+100*us, history.OK, 1), rel(0, "k", at+500*us, at+600*us, 0))
		at += ms
	}
	evs = append(evs,
		history.Event{T: 30 * ms, Client: -1, Op: history.OpHeal, Fault: &history.Fault{ID: 3, Kind: "kill-node", Effect: map[string]string{"restarted": "true"}}},
		history.Event{T: 31 * ms, Client: -1, Op: history.OpFault, Fault: &history.Fault{ID: 4, Kind: "partition", Applied: false}},
		phaseEv(at, "heal"))
	a, err := Analyze(writeHistory(t, t.TempDir(), evs), AnalyzeOptions{BucketNS: ms, MaxBuckets: 8, MaxSamples: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Faults) != 2 {
		t.Fatalf("faults = %+v", a.Faults)
	}
	f := a.Faults[0]
	if f.ID != 3 || f.AtMS != 5 || f.HealedMS != 30 || !f.Applied || f.Effect["pid"] != "42" || f.HealEffect["restarted"] != "true" || f.Request["restart"] != "empty" {
		t.Errorf("fault 3 = %+v", f)
	}
	if g := a.Faults[1]; g.Applied || g.HealedMS != 0 {
		t.Errorf("fault 4 = %+v", g)
	}
	s := a.Series
	if len(s.Cycles) > 8 || s.BucketNS < 5*ms {
		t.Errorf("series: %d buckets of %dns; want at most 8, each at least 5ms", len(s.Cycles), s.BucketNS)
	}
	var sum int64
	for _, c := range s.Cycles {
		sum += c
	}
	if sum != 40 {
		t.Errorf("series cycles sum = %d, want 40", sum)
	}
	if len(a.Samples) != 10 {
		t.Errorf("samples = %d, want 10", len(a.Samples))
	}
	for i := 1; i < len(a.Samples); i++ {
		if a.Samples[i].T < a.Samples[i-1].T {
			t.Fatal("samples not sorted by time")
		}
	}
}

func TestAnalyzeErrors(t *testing.T) {
	if _, err := Analyze("/nonexistent/history.jsonl", AnalyzeOptions{}); err == nil {
		t.Error("missing file: want an error")
	}
}

func TestJain(t *testing.T) {
	for _, tc := range []struct {
		xs   []int64
		want float64
	}{
		{[]int64{5, 5, 5, 5}, 1},
		{[]int64{10, 0, 0, 0}, 0.25},
		{[]int64{2, 1}, 0.9},
		{[]int64{0, 0}, 0},
		{nil, 0},
	} {
		if got := Jain(tc.xs); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Jain(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}

// writeHistory writes events into dir's history.jsonl with the history
// writer and returns its path.
func writeHistory(t testing.TB, dir string, evs []history.Event) string {
	t.Helper()
	path := filepath.Join(dir, history.JSONLFile)
	w, err := history.Create(path)
	if err == nil {
		for i := range evs {
			w.Append(&evs[i])
		}
		err = w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}
