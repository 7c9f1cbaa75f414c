package lockimpl_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// Nested acquires count up, each release undoes one level, and the key is
// freed (another client can take it) only at depth 0.
func TestReentrantDepth(t *testing.T) {
	s := startServer(t)
	for _, name := range []string{"reentrant", "watchdog", "local-reentrant"} {
		t.Run(name, func(t *testing.T) {
			o := lockimpl.Options{TTL: 5 * time.Second}
			a, b := s.locker(t, name, o), s.locker(t, name, o)
			if r, ok := a.(lockimpl.Reentrant); !ok || !r.Reentrant() {
				t.Fatal("not a Reentrant locker")
			}
			key := "depth-" + name
			var leases []lockimpl.Lease
			for d := 1; d <= 3; d++ {
				l := mustAcquire(t, a, key)
				if l.Depth() != d {
					t.Fatalf("acquire %d: depth %d", d, l.Depth())
				}
				leases = append(leases, l)
				if name != "local-reentrant" {
					if n, _ := s.admin.HGet(context.Background(), key, l.Token()).Int(); n != d {
						t.Fatalf("server count %d after acquire %d", n, d)
					}
				}
			}
			for d := 2; d >= 0; d-- {
				mustRelease(t, leases[d])
				if d > 0 {
					if !s.owns(t, key, leases[0].Token()) {
						t.Fatalf("key freed at depth %d", d)
					}
					if _, err := b.TryAcquire(context.Background(), key); !errors.Is(err, lockimpl.ErrNotAcquired) {
						t.Fatalf("other client at depth %d: %v, want ErrNotAcquired", d, err)
					}
				}
				if name != "local-reentrant" && d > 0 {
					if n, _ := s.admin.HGet(context.Background(), key, leases[0].Token()).Int(); n != d {
						t.Fatalf("server count %d after release to depth %d", n, d)
					}
				}
			}
			if s.exists(t, key) {
				t.Fatal("key left at depth 0")
			}
			mustRelease(t, mustAcquire(t, b, key))
		})
	}
}

// A re-entry after the key expired and another client took it: the hash
// lock asks Redis and is refused; local-reentrant re-enters anyway (its
// documented mistake), so two clients hold at once.
func TestReentryAfterExpiry(t *testing.T) {
	s := startServer(t)
	for _, tc := range []struct {
		name     string
		reenters bool
	}{{"reentrant", false}, {"local-reentrant", true}} {
		t.Run(tc.name, func(t *testing.T) {
			key := "reentry-" + tc.name
			a := s.locker(t, tc.name, lockimpl.Options{TTL: 50 * time.Millisecond})
			b := s.locker(t, tc.name, lockimpl.Options{TTL: 5 * time.Second})
			mustAcquire(t, a, key)
			s.awaitGone(t, key)
			lb := mustAcquire(t, b, key)
			l2, err := a.TryAcquire(context.Background(), key)
			if !tc.reenters {
				if !errors.Is(err, lockimpl.ErrNotAcquired) {
					t.Fatalf("re-entry: %v, want ErrNotAcquired", err)
				}
				return
			}
			if err != nil || l2.Depth() != 2 {
				t.Fatalf("re-entry: %v; want a depth-2 lease", err)
			}
			if !s.owns(t, key, lb.Token()) || s.owns(t, key, l2.Token()) {
				t.Fatal("the server should say b holds the key")
			}
			// And the re-entry promises a fresh TTL of validity it does not have.
			if !l2.Deadline().After(time.Now()) {
				t.Fatal("re-entry deadline already passed")
			}
		})
	}
}
