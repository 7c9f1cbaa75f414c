package lockimpl

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestFanoutOrderWorkersAndClose(t *testing.T) {
	conns := make([]redis.UniversalClient, 4)
	index := map[redis.UniversalClient]int{}
	for i := range conns {
		conns[i] = redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
		index[conns[i]] = i
		defer conns[i].Close()
	}
	before := runtime.NumGoroutine() // go-redis clients run their own
	f := newFanout(conns)
	// Each op names its node in its error: reply j must be nodes[j]'s.
	op := func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		_, ok := ctx.Deadline()
		return ok, fmt.Errorf("node %d", index[c])
	}
	check := func(nodes []int) {
		t.Helper()
		got := f.run(context.Background(), nodes, time.Second, op)
		if len(got) != len(nodes) {
			t.Fatalf("%d replies for nodes %v", len(got), nodes)
		}
		for j, n := range nodes {
			if !got[j].ok || got[j].err.Error() != fmt.Sprintf("node %d", n) {
				t.Errorf("reply %d for node %d: %+v (want node %d's, with a deadline)", j, n, got[j], n)
			}
		}
	}
	check(f.every)
	check([]int{3, 1})
	if n := runtime.NumGoroutine(); n < before+len(conns) {
		t.Fatalf("workers not started: %d goroutines, %d before", n, before)
	}
	f.close()
	check(f.every) // still answers after close, by spawning
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after close, %d before: workers not stopped", n, before)
	}
}
