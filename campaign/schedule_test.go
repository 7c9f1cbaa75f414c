package campaign

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/scenarios"
)

// The catalog's busy cells run alone, the timing cells share the machine.
func TestCellAppetite(t *testing.T) {
	for name, alone := range map[string]bool{"contention": true, "hot-keys": true, "smoke": true,
		"gc-pause": false, "failover": false, "restart-empty": false, "cluster-failover": false, "slow-acquire": false} {
		s, err := scenarios.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if a := cellAppetite(s); (a >= appetiteAlone) != alone || a <= 0 {
			t.Errorf("%s: appetite %.2f cores, want alone=%v", name, a, alone)
		}
	}
}

// The scheduler never runs more than max cells, never more appetite than
// its budget, and a cell that runs alone with nothing beside it.
func TestSchedulerPacks(t *testing.T) {
	s := newScheduler(3)
	s.budget, s.load, s.busyMax = 1.0, nil, 1 // no look at the machine's load: deterministic; busy cells one at a time
	cells := []float64{0.4, 0.3, 0.2, 0.9, 0.2, 0.2, 0.1, 0.6, 0.1}
	var mu sync.Mutex
	running, used, aloneNow := 0, 0.0, false
	var wg sync.WaitGroup
	for _, a := range cells {
		sl := s.acquire(context.Background(), a)
		if sl == nil {
			t.Fatal("acquire refused without a cancelled context")
		}
		mu.Lock()
		running++
		used += a
		alone := a >= appetiteAlone
		if running > 3 || used > 1.0+1e-9 && running > 1 || (alone || aloneNow) && running > 1 {
			t.Errorf("admitted %.1f: %d running using %.1f cores (alone %v/%v)", a, running, used, alone, aloneNow)
		}
		aloneNow = aloneNow || alone
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			running--
			used -= a
			if alone {
				aloneNow = false
			}
			mu.Unlock()
			sl.release()
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	s.acquire(ctx, appetiteExclusive)
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if s.acquire(ctx, 0.1) != nil {
		t.Error("a cell was admitted beside one that runs alone")
	}
}

// Busy cells run beside each other (up to busyMax) but never beside a
// timing cell's clients; in their tails (stopping, check, report) timing
// cells start within the budget. An exclusive step (a card's bench) waits
// for every busy cell's clients and keeps the machine from all but tails.
func TestBusyCellTail(t *testing.T) {
	s := newScheduler(8)
	s.budget, s.load, s.busyMax = 1.5, nil, 2
	soon := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 30*time.Millisecond)
	}
	refused := func(a float64, why string) {
		t.Helper()
		ctx, cancel := soon()
		defer cancel()
		if s.acquire(ctx, a) != nil {
			t.Fatal(why)
		}
	}
	a := s.acquire(context.Background(), 5)
	refused(0.1, "a timing cell started beside a busy cell's clients")
	b := s.acquire(context.Background(), 5)
	if b == nil {
		t.Fatal("no second busy cell beside the first")
	}
	refused(5, "a third busy cell started beyond busyMax 2")
	refused(appetiteExclusive, "an exclusive step started beside busy cells")
	a.clientsDone()
	refused(0.1, "a timing cell started beside a busy cell's clients")
	c := s.acquire(context.Background(), 5)
	if c == nil {
		t.Fatal("no busy cell started in the previous one's tail")
	}
	b.clientsDone()
	c.clientsDone()
	// Three tails (a core each) leave no room in 1.5 cores; one does.
	refused(0.4, "a timing cell started beyond the budget beside three tails")
	a.release()
	b.release()
	d := s.acquire(context.Background(), 0.4)
	refused(appetiteExclusive, "an exclusive step started beside a timing cell")
	c.release()
	d.release()
	e := s.acquire(context.Background(), appetiteExclusive)
	refused(5, "a busy cell started beside an exclusive step")
	refused(0.01, "a timing cell started beside an exclusive step")
	e.clientsDone()
	f := s.acquire(context.Background(), 0.4)
	e.release()
	f.release()
	if s.running != 0 || s.tails != 0 || s.alone != 0 || s.excl != 0 || s.used != 0 {
		t.Errorf("after releases: running %d tails %d alone %d excl %d used %.2f", s.running, s.tails, s.alone, s.excl, s.used)
	}
}

// One at a time means one at a time, whatever the appetite.
func TestSchedulerOneAtATime(t *testing.T) {
	s := newScheduler(1)
	first := s.acquire(context.Background(), 0.01)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if s.acquire(ctx, 0.01) != nil {
		t.Error("a second cell started at --parallel 1")
	}
	first.clientsDone()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel2()
	if s.acquire(ctx2, 0.01) != nil {
		t.Error("a second cell started in the first one's tail at --parallel 1")
	}
	first.release()
	if s.acquire(context.Background(), 0.01) == nil {
		t.Error("no cell started after the first ended")
	}
}

// /proc/stat gives a busy fraction in [0, 1] where there is one.
func TestCPULoad(t *testing.T) {
	l := newCPULoad()
	if l == nil {
		t.Skip("no /proc/stat")
	}
	time.Sleep(200 * time.Millisecond)
	if f := l.busy(); f < 0 || f > 1 {
		t.Errorf("busy fraction %v", f)
	}
}
