package lockimpl_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/lockimpl"
	_ "github.com/lockchaos/lockchaos/lockimpl/adapters"
)

// Each adapter, against real redis-server: mutual exclusion between two
// lockers, release frees the key for the other, and a release after someone
// else took the key is ErrNotOwner and leaves their key alone.
func TestAdapters(t *testing.T) {
	for _, tc := range []struct {
		lock  string
		nodes int
		// stored is the key the library writes for a lock on key.
		stored func(key string) string
	}{
		{"redsync", 3, func(k string) string { return k }},
		{"redislock", 1, func(k string) string { return k }},
		{"rueidislock", 1, func(k string) string { return "rueidislock:0:" + k }},
	} {
		t.Run(tc.lock, func(t *testing.T) {
			c := startMasters(t, tc.nodes)
			ctx := context.Background()
			o := lockimpl.Options{TTL: time.Second, RetryDelay: time.Millisecond}
			a := newLocker(t, c, tc.lock, o, nil)
			b := newLocker(t, c, tc.lock, o, nil)
			if _, ok := a.(lockimpl.Configured); !ok {
				t.Error("does not report its config")
			}
			switch n := exclusive(t, a, b, "mx", 100); {
			case n > 0 && tc.lock == "rueidislock":
				// Its WithContext can miss the wake-up of a release and then
				// waits for its context (adapter_rueidislock.go): liveness,
				// not exclusion, so only noted here.
				t.Logf("%d of 200 acquires timed out waiting for a free lock", n)
			case n > 0:
				t.Fatalf("%d of 200 acquires timed out", n)
			}

			l, err := a.TryAcquire(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			// A library that names its own key declares it
			// (lockimpl.KeyMapper), and the key it declares is the
			// one on the server.
			switch keys := lockimpl.KeysOf(a, l, "k"); {
			case tc.stored("k") == "k" && keys != nil:
				t.Errorf("keys %q, want none: it writes the key it is given", keys)
			case tc.stored("k") != "k" && (len(keys) != 1 || keys[0] != tc.stored("k")):
				t.Errorf("keys %q, want [%s]", keys, tc.stored("k"))
			case keys != nil && c.AdminClient(c.Nodes[0]).Exists(ctx, keys[0]).Val() != 1:
				t.Errorf("the declared key %s is not on the server", keys[0])
			}
			if d := l.Deadline(); !d.IsZero() && (time.Until(d) > o.TTL || time.Until(d) < o.TTL/2) {
				t.Errorf("deadline in %v, want about the TTL %v", time.Until(d), o.TTL)
			}
			if _, err := b.TryAcquire(ctx, "k"); !errors.Is(err, lockimpl.ErrNotAcquired) {
				t.Fatalf("TryAcquire of a held key: %v, want ErrNotAcquired", err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatalf("release: %v", err)
			}
			lb, err := b.TryAcquire(ctx, "k")
			if err != nil {
				t.Fatalf("TryAcquire after release: %v", err)
			}

			// Someone else overwrites b's key on every node.
			for _, n := range c.Nodes {
				c.AdminClient(n).Set(ctx, tc.stored("k"), "other", 0)
			}
			if lost := lb.Lost(); lost != nil {
				select {
				case <-lost:
				case <-time.After(time.Second):
					t.Fatal("Lost not closed within 1s of the key being taken")
				}
			}
			if err := lb.Release(ctx); !errors.Is(err, lockimpl.ErrNotOwner) {
				t.Fatalf("release of a key someone else holds: %v, want ErrNotOwner", err)
			}
			for _, n := range c.Nodes {
				if v := c.AdminClient(n).Get(ctx, tc.stored("k")).Val(); v != "other" {
					t.Fatalf("node %s: the other owner's key is %q after our release", n.Name, v)
				}
			}
		})
	}
}
