package workloads_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/clustertest"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
	_ "github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/workloads"
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
	rec := history.NewRecorder(hw)
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
	var hit faults.Hit
	var got bool
	evs, w := runFor(t, c, cfg, 1500*time.Millisecond, func(w *workloads.Workload) {
		time.Sleep(200 * time.Millisecond)
		ch := w.Pause(context.Background(), []int{0}, "before-write", 1200*time.Millisecond)
		hit, got = <-ch
	})
	if !got {
		t.Fatal("pause never happened")
	}
	if d := time.Duration(hit.To - hit.From); d < 1200*time.Millisecond || hit.Client != 0 {
		t.Fatalf("paused client %d for %v, want client 0 for >= 1.2s", hit.Client, d)
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

// any-client arms every client: exactly one of them, the first at the
// point, is paused, and a watch reports a client at its point without
// stopping it.
func TestArmAnyClient(t *testing.T) {
	c := startRedis(t)
	cfg := workloads.Config{Clients: 3, Keys: 1, Hold: workloads.Range{Min: 2 * time.Millisecond, Max: 2 * time.Millisecond}}
	var paused, watched faults.Hit
	var gotPause, gotWatch bool
	evs, _ := runFor(t, c, cfg, 800*time.Millisecond, func(w *workloads.Workload) {
		time.Sleep(100 * time.Millisecond)
		all := []int{0, 1, 2}
		watched, gotWatch = <-w.Watch(context.Background(), all, "before-release")
		paused, gotPause = <-w.Pause(context.Background(), all, "after-acquire", 100*time.Millisecond)
	})
	if !gotWatch || !gotPause {
		t.Fatalf("watch reached %v, pause reached %v", gotWatch, gotPause)
	}
	var pauses []history.Event
	for _, e := range evs {
		if e.Op == history.OpPause {
			pauses = append(pauses, e)
		}
	}
	if len(pauses) != 1 || pauses[0].Client != paused.Client || pauses[0].Detail != "after-acquire" {
		t.Fatalf("pause events %+v, want one, of client %d at after-acquire", pauses, paused.Client)
	}
	if d := time.Duration(paused.To - paused.From); d < 100*time.Millisecond {
		t.Errorf("paused %v, want >= 100ms", d)
	}
	if watched.From != watched.To || watched.From == 0 {
		t.Errorf("watch hit %+v: want one instant", watched)
	}
}

// key_dist per-client: client i only ever locks key i mod keys, so with as
// many keys as clients no acquire is refused.
func TestPerClientKeys(t *testing.T) {
	c := startRedis(t)
	cfg := workloads.Config{Clients: 4, Keys: 4, KeyDist: "per-client"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	evs, _ := runFor(t, c, cfg, 300*time.Millisecond, nil)
	acquires := 0
	for _, e := range evs {
		if e.Op != history.OpAcquire {
			continue
		}
		acquires++
		if want := fmt.Sprintf("k%d", e.Client); e.Key != want || e.Result != history.OK {
			t.Fatalf("client %d acquired %s (%s), want only %s, always ok", e.Client, e.Key, e.Result, want)
		}
	}
	if acquires < 40 {
		t.Fatalf("%d acquires in 300ms", acquires)
	}
}

// A hold longer than the run ends at the run's end: every client still
// writes and releases, and Run returns promptly (runFor fails after 10s).
func TestHoldEndsWithRun(t *testing.T) {
	c := startRedis(t)
	cfg := workloads.Config{Clients: 3, Keys: 3, KeyDist: "per-client", Hold: workloads.Range{Min: time.Hour, Max: time.Hour}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	evs, _ := runFor(t, c, cfg, 200*time.Millisecond, nil)
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("run with a 1h hold took %v", el)
	}
	released := map[int]bool{}
	for _, e := range evs {
		if e.Op == history.OpRelease && e.Result == history.OK {
			released[e.Client] = true
		}
	}
	if len(released) != 3 {
		t.Fatalf("clients that released: %v, want all 3", released)
	}
}

// Every cycle point of the vocabulary (history.Points) is a place the
// workload's clients actually reach: a fault armed there fires.
func TestEveryPointIsReached(t *testing.T) {
	c := startRedis(t)
	cfg := workloads.Config{Clients: 2, Keys: 1, Hold: workloads.Range{Min: 2 * time.Millisecond, Max: 2 * time.Millisecond}}
	reached := map[string]bool{}
	runFor(t, c, cfg, 100*time.Millisecond, func(w *workloads.Workload) {
		for _, p := range history.Points {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, ok := <-w.Watch(ctx, []int{0, 1}, p)
			cancel()
			reached[p] = ok
		}
	})
	for _, p := range history.Points {
		if !reached[p] {
			t.Errorf("no client reached point %s within 2 s", p)
		}
	}
}

// A block-loop pause of a client whose lock has no event loop to block (an
// in-process lock) still freezes the client for its duration, and says
// that the loop was not blocked (the fault records it as not taken
// effect); a clock skew of an in-process lock's client reaches its clock
// only, with nothing measured in a process and no error.
func TestBlockLoopWithoutALoopSaysSo(t *testing.T) {
	c := startRedis(t)
	cfg := workloads.Config{Clients: 2, Keys: 1, Hold: workloads.Range{Min: 2 * time.Millisecond, Max: 2 * time.Millisecond}}
	var hit faults.Hit
	var got bool
	_, _ = runFor(t, c, cfg, 500*time.Millisecond, func(w *workloads.Workload) {
		time.Sleep(100 * time.Millisecond)
		hit, got = <-w.BlockLoop(context.Background(), []int{0}, "now", 150*time.Millisecond)
		if eff, err := w.SetClock(1, time.Second, 1); eff != nil || err != nil {
			t.Errorf("SetClock of an in-process lock: %v, %v", eff, err)
		}
		w.SetClock(1, 0, 1)
	})
	if !got {
		t.Fatal("the client never paused")
	}
	if d := time.Duration(hit.To - hit.From); d < 150*time.Millisecond {
		t.Errorf("paused %v, want >= 150ms", d)
	}
	if r := hit.Effect[history.EffectReason]; r == "" {
		t.Errorf("effect %v: no reason for a loop that was not blocked", hit.Effect)
	}
}

// A cancel reaches the call in flight at its point and the client goes on:
// in the critical section it cancels the context the deferred release gets
// (simple's release is refused before it is sent: that client's next
// release ends in context.Canceled), in the acquire and the release it
// names the call it cancelled, and the client's later cycles run as
// before.
func TestCancelReachesTheCallInFlight(t *testing.T) {
	c := startRedis(t)
	cfg := workloads.Config{Clients: 2, Keys: 1, Hold: workloads.Range{Min: 2 * time.Millisecond, Max: 2 * time.Millisecond}}
	hits := map[string]faults.Hit{}
	// 600 ms: the three cancels take a few cycles each, and under -race
	// the last one came near the end of a 300 ms run, before client h's
	// next acquire.
	evs, _ := runFor(t, c, cfg, 600*time.Millisecond, func(w *workloads.Workload) {
		for _, p := range []string{history.PointAfterAcquire, history.PointInAcquire, history.PointInRelease} {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			h, ok := <-w.Cancel(ctx, []int{0, 1}, p, 0)
			cancel()
			if !ok {
				t.Fatalf("no client reached %s within 2 s", p)
			}
			hits[p] = h
		}
	})
	for p, call := range map[string]string{history.PointAfterAcquire: "none", history.PointInAcquire: "acquire", history.PointInRelease: "release"} {
		if got := hits[p].Effect[history.EffectCall]; got != call || hits[p].Effect[history.EffectReason] != "" {
			t.Errorf("cancel at %s: effect %v, want call %s and no reason", p, hits[p].Effect, call)
		}
	}
	h := hits[history.PointAfterAcquire]
	var first *history.Event // client h's first release after the cancel in its critical section
	after := 0
	for i, e := range evs {
		if e.Op == history.OpRelease && e.Client == h.Client && e.T >= h.From && first == nil {
			first = &evs[i]
		}
		if e.Op == history.OpAcquire && e.Client == h.Client && e.Result == history.OK && e.T > hits[history.PointInRelease].To {
			after++
		}
	}
	if first == nil || !strings.Contains(first.Err, "context canceled") {
		t.Errorf("client %d's release after the cancel in its critical section: %+v, want one ended in context.Canceled", h.Client, first)
	}
	if after == 0 {
		t.Errorf("client %d acquired nothing after the cancels: it did not go on", h.Client)
	}
}

// A throw in the critical section skips the rest of it and releases on the
// exception path: no write of the thrower's between the throw and its
// release, which answers ok (the Go application's deferred release
// recovers the panic), and the client goes on. A sigterm on a lock with no
// process of its own says so and stops nobody.
func TestThrowReleasesOnTheExceptionPath(t *testing.T) {
	c := startRedis(t)
	cfg := workloads.Config{Clients: 2, Keys: 1, Hold: workloads.Range{Min: 2 * time.Millisecond, Max: 2 * time.Millisecond}}
	hits := map[string]faults.Hit{}
	var term faults.Hit
	evs, _ := runFor(t, c, cfg, 600*time.Millisecond, func(w *workloads.Workload) {
		for _, p := range []string{history.PointAfterAcquire, history.PointBeforeWrite, history.PointInWrite, history.PointBeforeRelease} {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			h, ok := <-w.Throw(ctx, []int{0, 1}, p)
			cancel()
			if !ok {
				t.Fatalf("no client reached %s within 2 s", p)
			}
			hits[p] = h
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		term = <-w.Terminate(ctx, []int{0}, history.PointAfterAcquire, 0, time.Second)
		cancel()
	})
	for p, h := range hits {
		if h.Effect[history.EffectRelease] != string(history.OK) || h.Effect[history.EffectPanicRecover] != "true" || h.Effect[history.EffectReason] != "" {
			t.Errorf("throw at %s: effect %v, want the release ok, the panic recovered", p, h.Effect)
		}
		for _, e := range evs {
			if e.Client == h.Client && e.Op == history.OpWrite && e.T >= h.From && e.T <= h.To {
				t.Errorf("throw at %s: client %d wrote at %d, between the throw (%d) and its release (%d)", p, h.Client, e.T, h.From, h.To)
			}
		}
	}
	if !strings.Contains(term.Effect[history.EffectReason], "no process of its own") {
		t.Errorf("sigterm on an in-process lock: effect %v, want the reason it did not take effect", term.Effect)
	}
	after := map[int]int{}
	for _, e := range evs {
		if e.Op == history.OpAcquire && e.Result == history.OK && e.T > hits[history.PointBeforeRelease].To {
			after[e.Client]++
		}
	}
	if h := hits[history.PointBeforeRelease]; after[h.Client] == 0 {
		t.Errorf("client %d acquired nothing after its throw: it did not go on", h.Client)
	}
}
