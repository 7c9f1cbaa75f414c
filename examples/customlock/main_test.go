package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/clustertest"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

func TestRegistered(t *testing.T) {
	info, _, err := lockimpl.Lookup("seq-lock")
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != lockimpl.User {
		t.Fatalf("kind %q, want user", info.Kind)
	}
}

// Against a real redis-server (skipped without one): two clients never hold
// the key at once, and a release after someone else took the key is refused.
func TestMutualExclusion(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.Single})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	newLock := func(id int) lockimpl.Locker {
		conn := c.NewClient(c.Endpoints()[0], cluster.ClientOptions{})
		lk, err := lockimpl.New("seq-lock", lockimpl.Env{ClientID: id, Conns: []redis.UniversalClient{conn}})
		if err != nil {
			t.Fatal(err)
		}
		return lk
	}

	var inside, overlaps atomic.Int32
	var wg sync.WaitGroup
	for id := range 2 {
		lk := newLock(id)
		wg.Go(func() {
			for range 200 {
				l, err := lk.Acquire(ctx, "k")
				if err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				time.Sleep(100 * time.Microsecond)
				inside.Add(-1)
				if err := l.Release(ctx); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	wg.Wait()
	if overlaps.Load() != 0 {
		t.Fatalf("%d overlapping holds", overlaps.Load())
	}

	l, err := newLock(2).TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	c.AdminClient(c.Nodes[0]).Set(ctx, "k", "someone-else", 0)
	if err := l.Release(ctx); !errors.Is(err, lockimpl.ErrNotOwner) {
		t.Fatalf("release of a key someone else holds: %v, want ErrNotOwner", err)
	}
}

// The whole public path on the in-process backend: a short smoke run is valid.
func TestSmokeRun(t *testing.T) {
	s, err := scenarios.Builtin("smoke")
	if err != nil {
		t.Fatal(err)
	}
	s.Duration = 500 * time.Millisecond
	res, err := runner.Run(context.Background(), runner.Options{Scenario: s, Lock: "seq-lock", Backend: cluster.Embedded, Out: t.TempDir(), Expect: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Results.Verdict != "valid" || res.ExitCode != runner.ExitOK {
		t.Fatalf("verdict %s, exit %d; want valid, 0 (run dir %s)", res.Results.Verdict, res.ExitCode, res.Dir)
	}
}
