package campaign

import (
	"strings"
	"testing"
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
