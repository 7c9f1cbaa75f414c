package campaign

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/runner"
)

// bench --min-ratio: a lock at 0.96 of bare go-redis passes 0.95, one at
// 0.74 fails it with both numbers named; no yardstick fails too.
func TestRatioGate(t *testing.T) {
	for _, c := range []struct {
		lock, bare, min float64
		ok              bool
	}{
		{48000, 50000, 0.95, true},
		{47500, 50000, 0.95, true}, // exactly the bound
		{37000, 50000, 0.95, false},
		{37000, 50000, 0.7, true},
		{1, 0, 0.1, false},
	} {
		if r, ok := ratioAtLeast(c.lock, c.bare, c.min); ok != c.ok {
			t.Errorf("ratioAtLeast(%v, %v, %v) = %v, %v; want %v", c.lock, c.bare, c.min, r, ok, c.ok)
		}
	}
	b := &Bench{Repeat: 3, GoRedisCS: 50000, Locks: []BenchLock{{Lock: "simple", Throughput: 48000}}}
	if err := RatioGate(b, 0.95); err != nil {
		t.Errorf("0.96 of bare go-redis against --min-ratio 0.95: %v", err)
	}
	b.Locks = append(b.Locks, BenchLock{Lock: "redlock", Throughput: 37000})
	err := RatioGate(b, 0.95)
	if err == nil {
		t.Fatal("0.74 of bare go-redis passed --min-ratio 0.95")
	}
	for _, want := range []string{"redlock ran 37000 cycles/s", "bare go-redis's 50000", "0.740", "below 0.95"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("gate message %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "simple") {
		t.Errorf("gate message names the lock that passed: %q", err)
	}
	if err := RatioGate(&Bench{Locks: b.Locks[:1]}, 0.5); err == nil || !strings.Contains(err.Error(), "no bare go-redis") {
		t.Errorf("no yardstick: %v", err)
	}
}

// A lock that waits for replicas is refused by a bench on servers it
// starts (masters without replicas: it would complete no cycle, as
// simple-wait's 0 cycles/s in an earlier card showed), before any server
// starts, naming the lock; the card leaves it out of its cost rows and
// says why.
func TestBenchRefusesALockThatNeedsReplicas(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bench")
	_, err := RunBench(context.Background(), BenchOptions{Locks: []string{"simple-wait"}, Clients: 1, Keys: 1, Duration: time.Second,
		Setup: runner.Setup{Backend: "process"}, Out: out})
	var re *runner.Error
	if !errors.As(err, &re) || re.Class != runner.BadInput || re.Field != "lock" || !strings.Contains(err.Error(), "simple-wait needs replicas") {
		t.Fatalf("want bad input naming --lock simple-wait and its replicas, got %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the refused bench made its directory")
	}
	info, _, _ := lockimpl.Lookup("simple-wait")
	if NotBenched(info, "external") != "" {
		t.Error("an external deployment may have replicas: not refused there")
	}
}
