package lockimpl_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// The broken controls whose own commands make the state wrong with no fault
// at all (issue 33, part 3), each shown against real servers beside the
// correct lock it varies.

// redlock-minority-quorum takes 2 of 5 masters as a quorum: with the other
// three held by someone else it still acquires, where redlock refuses.
func TestMinorityQuorumTakesTwoOfFive(t *testing.T) {
	c := startMasters(t, 5)
	ctx := context.Background()
	// Another owner holds n3, n4, n5: a majority.
	for _, n := range c.Nodes[2:] {
		if err := c.AdminClient(n).Set(ctx, "mq", "other-owner", 5*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	o := lockimpl.Options{TTL: 5 * time.Second}
	if _, err := newLocker(t, c, "redlock", o, nil).TryAcquire(ctx, "mq"); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("redlock with a majority held elsewhere: %v, want ErrNotAcquired", err)
	}
	l, err := newLocker(t, c, "redlock-minority-quorum", o, nil).TryAcquire(ctx, "mq")
	if err != nil {
		t.Fatalf("redlock-minority-quorum on the 2 free nodes of 5: %v, want acquired", err)
	}
	if n := holders(t, c, "mq", l.Token()); n != 2 {
		t.Fatalf("held on %d nodes, want 2", n)
	}
}

// reentrant-no-owner-check adds a second owner's field to the hash
// another owner holds; reentrant refuses.
func TestAcquireIntoAnotherOwnersHash(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	o := lockimpl.Options{TTL: 5 * time.Second}
	for _, tc := range []struct {
		name  string
		taken bool
	}{{"reentrant", false}, {"reentrant-no-owner-check", true}} {
		t.Run(tc.name, func(t *testing.T) {
			key := "fh-" + tc.name
			a, b := s.locker(t, tc.name, o), s.locker(t, tc.name, o)
			la := mustAcquire(t, a, key)
			lb, err := b.TryAcquire(ctx, key)
			if got := err == nil; got != tc.taken {
				t.Fatalf("second owner's acquire while the first holds: %v", err)
			}
			if !tc.taken {
				return
			}
			if fields, _ := s.admin.HLen(ctx, key).Result(); fields != 2 {
				t.Fatalf("hash has %d fields, want both owners' 2", fields)
			}
			// The first owner's release deletes the key under the second.
			mustRelease(t, la)
			if s.exists(t, key) {
				t.Fatal("the first owner's release left the key")
			}
			if err := lb.Release(ctx); !errors.Is(err, lockimpl.ErrNotOwner) {
				t.Fatalf("second owner's release: %v, want ErrNotOwner (its key was deleted)", err)
			}
		})
	}
}

// fenced-random's fences do not increase from one owner to the next;
// fenced's do (TestFencedTokensIncrease).
func TestRandomFenceGoesBackwards(t *testing.T) {
	s := startServer(t)
	lk := s.locker(t, "fenced-random", lockimpl.Options{TTL: 5 * time.Second})
	var last uint64
	back := 0
	for range 20 {
		l := mustAcquire(t, lk, "rf")
		f, ok := l.Fence()
		if !ok || f == 0 {
			t.Fatalf("fence %d (ok %v)", f, ok)
		}
		if f <= last {
			back++
		}
		last = f
		mustRelease(t, l)
	}
	// Each of 19 steps goes down with probability 1/2: none in 19 is
	// 2^-19.
	if back == 0 {
		t.Fatal("20 random fences in increasing order")
	}
	if n, err := s.admin.Exists(context.Background(), "{rf}:fence").Result(); err != nil || n != 0 {
		t.Fatalf("a fencing counter exists (%d, %v): the control must not INCR one", n, err)
	}
}

// fenced-incr-after-set issues its fence by an INCR of the counter after
// its SET NX took the key: each owner's fence is the counter's value then,
// one above the previous owner's, and a refused acquire (its SET NX found
// the key held) INCRs nothing. Between the two commands the key may expire
// (catalog late-fence, checker fence-issued-late).
func TestFenceIncrAfterSet(t *testing.T) {
	s := startServer(t)
	a := s.locker(t, "fenced-incr-after-set", lockimpl.Options{TTL: 5 * time.Second})
	b := s.locker(t, "fenced-incr-after-set", lockimpl.Options{TTL: 5 * time.Second})
	var last uint64
	for i := range 4 {
		lk := a
		if i%2 == 1 {
			lk = b
		}
		l := mustAcquire(t, lk, "lf")
		f, ok := l.Fence()
		if !ok || f != last+1 {
			t.Fatalf("owner %d: fence %d (ok %v) after %d", i, f, ok, last)
		}
		last = f
		if _, err := b.TryAcquire(context.Background(), "lf"); !errors.Is(err, lockimpl.ErrNotAcquired) {
			t.Fatalf("a second acquire of a held key: %v", err)
		}
		if n, err := s.admin.Get(context.Background(), "{lf}:fence").Uint64(); err != nil || n != f {
			t.Fatalf("counter %d (%v), want the holder's fence %d: a refused acquire INCRed it", n, err, f)
		}
		mustRelease(t, l)
	}
}

// reentrant-early-free deletes the key when a nested release leaves
// depth 1; reentrant keeps it until depth 0.
func TestReleaseFreesAtDepthOne(t *testing.T) {
	s := startServer(t)
	o := lockimpl.Options{TTL: 5 * time.Second}
	for _, tc := range []struct {
		name  string
		freed bool
	}{{"reentrant", false}, {"reentrant-early-free", true}} {
		t.Run(tc.name, func(t *testing.T) {
			key := "ef-" + tc.name
			lk := s.locker(t, tc.name, o)
			outer := mustAcquire(t, lk, key)
			inner := mustAcquire(t, lk, key)
			if inner.Depth() != 2 {
				t.Fatalf("nested depth %d", inner.Depth())
			}
			mustRelease(t, inner)
			if gone := !s.exists(t, key); gone != tc.freed {
				t.Fatalf("after leaving depth 2 the key is gone: %v", gone)
			}
			if tc.freed {
				// Another client takes it while the owner holds depth 1.
				mustAcquire(t, s.locker(t, tc.name, o), key)
				return
			}
			mustRelease(t, outer)
		})
	}
}
