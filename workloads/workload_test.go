package workloads_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"lockchaos/cluster"
	"lockchaos/cluster/clustertest"
	"lockchaos/history"
	_ "lockchaos/lockimpl"
	"lockchaos/workloads"
)

func startRedis(t *testing.T) *cluster.Cluster {
	t.Helper()
	return clustertest.Start(t, cluster.Spec{Topology: cluster.Single}).Cluster
}

func runFor(t *testing.T, c *cluster.Cluster, cfg workloads.Config, d time.Duration, during func(w *workloads.Workload)) ([]history.Event, *workloads.Workload) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	hw, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := workloads.NewRecorder(hw)
	w, err := workloads.New(workloads.Options{Config: cfg, Lock: "simple", Cluster: c, Rec: rec, Seed: 1, Histograms: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { w.Run(context.Background(), stop); close(done) }()
	if during != nil {
		during(w)
	}
	time.Sleep(d)
	close(stop)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("workload did not stop within 10s")
	}
	if err := hw.Close(); err != nil {
		t.Fatal(err)
	}
	evs, _, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return evs, w
}

// With a correct lock and no faults the non-atomic counter is exact: every
// accepted write equals the number of completed cycles on its key.
func TestCounterExactUnderSimpleLock(t *testing.T) {
	c := startRedis(t)
	cfg := workloads.Config{Clients: 6, Keys: 2}
	evs, w := runFor(t, c, cfg, 700*time.Millisecond, nil)
	writes := map[string]int64{}
	for _, e := range evs {
		if e.Op == history.OpWrite && e.Result == history.OK {
			writes[e.Key]++
		}
	}
	cycles, _, _ := w.Totals()
	if cycles < 50 {
		t.Fatalf("only %d cycles in 700ms", cycles)
	}
	for k := 0; k < 2; k++ {
		key := workloads.KeyName(k)
		if got := w.Resource().Value(k); got != writes[key] {
			t.Errorf("key %s: counter %d, but %d writes were accepted (lost updates)", key, got, writes[key])
		}
	}
	if w.Overlaps() != 0 {
		t.Errorf("live overlap estimate %d, want 0", w.Overlaps())
	}
	h := w.Histograms()
	if h["cycle"].TotalCount() != cycles {
		t.Errorf("cycle histogram has %d values, %d cycles", h["cycle"].TotalCount(), cycles)
	}
}

// A client paused past the TTL before its write lets another client in: the
// pause is recorded with its measured window and the counter loses updates.
func TestPauseBeforeWriteBreaksSimpleLock(t *testing.T) {
	c := startRedis(t)
	cfg := workloads.Config{Clients: 3, Keys: 1, Hold: workloads.Range{Min: 2 * time.Millisecond, Max: 2 * time.Millisecond}}
	var window [2]int64
	var got bool
	evs, w := runFor(t, c, cfg, 1500*time.Millisecond, func(w *workloads.Workload) {
		time.Sleep(200 * time.Millisecond)
		ch := w.Pause(context.Background(), 0, "before-write", 1200*time.Millisecond)
		window, got = <-ch
	})
	if !got {
		t.Fatal("pause never happened")
	}
	if d := time.Duration(window[1] - window[0]); d < 1200*time.Millisecond {
		t.Fatalf("paused for %v, want >= 1.2s", d)
	}
	var pauses int
	for _, e := range evs {
		if e.Op == history.OpPause {
			pauses++
		}
	}
	if pauses != 1 {
		t.Fatalf("%d pause events, want 1", pauses)
	}
	if w.Overlaps() == 0 {
		t.Errorf("no overlapping holds after a pause of 2.4×TTL")
	}
}
