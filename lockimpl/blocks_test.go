package lockimpl_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// NewLease's Release acts once: the second call is refused without calling
// the lock's release, so a reentrant lease released twice (here on the
// exported reentrant scripts) does not undo the level of another lease.
func TestNewLeaseReleasesOnce(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	env := lockimpl.Env{Options: lockimpl.Options{TTL: 5 * time.Second}.WithDefaults()}
	o, conn, key, owner := &env.Options, s.lockerEnvConns()[0], "once", lockimpl.NewToken()
	var calls atomic.Int32
	lease := func(depth int) lockimpl.Lease {
		return lockimpl.NewLease(lockimpl.LeaseFields{Key: key, Token: owner, Depth: depth,
			Release: func(ctx context.Context) error {
				calls.Add(1)
				_, err := lockimpl.ReleaseReentrant(ctx, conn, o, key, owner)
				return err
			}})
	}
	for want := 1; want <= 2; want++ {
		if n, err := lockimpl.AcquireReentrant(ctx, conn, o, key, owner); n != want || err != nil {
			t.Fatalf("acquire %d: %d, %v", want, n, err)
		}
	}
	outer, inner := lease(1), lease(2)
	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := inner.Release(ctx); !errors.Is(err, lockimpl.ErrNotOwner) || !strings.Contains(err.Error(), "already released") {
		t.Fatalf("second release: %v, want ErrNotOwner (already released)", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("the lock's release ran %d times, want 1", calls.Load())
	}
	if !s.owns(t, key, owner) {
		t.Fatal("a repeated inner release freed the outer level")
	}
	if err := outer.Release(ctx); err != nil || s.exists(t, key) {
		t.Fatalf("outer release: %v; key still there: %v", err, s.exists(t, key))
	}
}

// A lease whose deadline a lock moves itself: DeadlineFunc is read at
// every Deadline.
func TestNewLeaseDeadlineFunc(t *testing.T) {
	var d atomic.Pointer[time.Time]
	t0 := time.Unix(1000, 0)
	d.Store(&t0)
	l := lockimpl.NewLease(lockimpl.LeaseFields{Key: "k", Deadline: time.Unix(1, 0),
		DeadlineFunc: func() time.Time { return *d.Load() }, Release: func(context.Context) error { return nil }})
	if !l.Deadline().Equal(t0) {
		t.Fatalf("deadline %v, want %v (DeadlineFunc wins over Deadline)", l.Deadline(), t0)
	}
	t1 := t0.Add(time.Second)
	d.Store(&t1)
	if !l.Deadline().Equal(t1) {
		t.Fatalf("deadline %v after the lock moved it, want %v", l.Deadline(), t1)
	}
}

// The exported reentrant scripts: levels count up and down per owner,
// another owner is refused acquire, renewal and release, and the last
// level deletes the key.
func TestReentrantScripts(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	o := lockimpl.Options{TTL: 300 * time.Millisecond}.WithDefaults()
	conn, key, a, b := s.lockerEnvConns()[0], "hash", lockimpl.NewToken(), lockimpl.NewToken()
	for want := 1; want <= 2; want++ {
		if n, err := lockimpl.AcquireReentrant(ctx, conn, &o, key, a); n != want || err != nil {
			t.Fatalf("acquire %d: %d, %v", want, n, err)
		}
	}
	if _, err := lockimpl.AcquireReentrant(ctx, conn, &o, key, b); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("another owner's acquire: %v, want ErrNotAcquired", err)
	}
	if err := lockimpl.RenewReentrant(ctx, conn, &o, key, b); !errors.Is(err, lockimpl.ErrNotOwner) {
		t.Fatalf("another owner's renewal: %v, want ErrNotOwner", err)
	}
	if _, err := lockimpl.ReleaseReentrant(ctx, conn, &o, key, b); !errors.Is(err, lockimpl.ErrNotOwner) {
		t.Fatalf("another owner's release: %v, want ErrNotOwner", err)
	}
	time.Sleep(o.TTL / 2)
	if err := lockimpl.RenewReentrant(ctx, conn, &o, key, a); err != nil {
		t.Fatal(err)
	}
	if ms := s.admin.PTTL(ctx, key).Val(); ms < o.TTL*3/4 {
		t.Fatalf("TTL left after the renewal %v, want about %v", ms, o.TTL)
	}
	for want := 1; want >= 0; want-- {
		if n, err := lockimpl.ReleaseReentrant(ctx, conn, &o, key, a); n != want || err != nil {
			t.Fatalf("release to %d: %d, %v", want, n, err)
		}
	}
	if s.exists(t, key) {
		t.Fatal("the last release left the key")
	}
	if err := lockimpl.RenewReentrant(ctx, conn, &o, key, a); !errors.Is(err, lockimpl.ErrNotOwner) {
		t.Fatalf("renewal of a released key: %v, want ErrNotOwner", err)
	}
}

// A renewal interval that leaves no time before the Renewal declares the
// lease lost (RenewalGuard ahead of the deadline) never renews: shown on a
// manual clock, where it is exact. Options.Validate and NewRenewals refuse
// it, naming the field and the value; just below the limit they accept it.
func TestRenewIntervalAgainstGuard(t *testing.T) {
	const ttl = 100 * time.Millisecond // guard 5ms: intervals below 95ms
	clock := &manualClock{now: time.Unix(1000, 0)}
	ns := &notes{}
	env := lockimpl.Env{Options: lockimpl.Options{TTL: ttl, RenewInterval: 97 * time.Millisecond}.WithDefaults(), Clock: clock, Note: ns.add}
	var renews atomic.Int32
	r := lockimpl.NewRenewal(&env, "k", "t", clock.Now(), func(context.Context) error { renews.Add(1); return nil })
	done := make(chan struct{})
	go func() { r.Run(); close(done) }()
	clock.advance(t, 2, 95*time.Millisecond) // the watch wakes at deadline − guard
	select {
	case <-r.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost not closed at deadline − guard")
	}
	<-done
	if renews.Load() != 0 {
		t.Fatalf("%d renewals; the point is that none could be sent", renews.Load())
	}
	if err := env.Options.Validate(); err == nil || !strings.Contains(err.Error(), "renew_interval: 97ms") {
		t.Errorf("Validate: %v, want an error naming renew_interval: 97ms", err)
	}
	if _, err := lockimpl.NewRenewals(&env, 0); err == nil || !strings.Contains(err.Error(), "renew_interval: 97ms") {
		t.Errorf("NewRenewals(0): %v, want an error naming renew_interval: 97ms", err)
	}
	if _, err := lockimpl.NewRenewals(&env, 96*time.Millisecond); err == nil || !strings.Contains(err.Error(), "renewal interval: 96ms") {
		t.Errorf("NewRenewals(96ms): %v, want an error naming the renewal interval 96ms", err)
	}
	env.Options.RenewInterval = 94 * time.Millisecond
	if err := env.Options.Validate(); err != nil {
		t.Errorf("Validate with 94ms: %v", err)
	}
	if _, err := lockimpl.NewRenewals(&env, 90*time.Millisecond); err != nil {
		t.Errorf("NewRenewals(90ms): %v", err)
	}
}

// Renewals runs each renewal until its lease is released (Release stops
// it), keeps the key alive meanwhile, abandons what still runs at Close
// (Lost closes without a NoteLost) and abandons at once what starts after.
func TestRenewalsLifecycle(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	ns := &notes{}
	env := lockimpl.Env{Clock: lockimpl.RealClock{}, Note: ns.add,
		Options: lockimpl.Options{TTL: 150 * time.Millisecond, RenewInterval: 40 * time.Millisecond}.WithDefaults()}
	rs, err := lockimpl.NewRenewals(&env, 0)
	if err != nil {
		t.Fatal(err)
	}
	o, conn := &env.Options, s.lockerEnvConns()[0]
	hold := func(key string) lockimpl.Lease {
		token, start := lockimpl.NewToken(), env.Clock.Now()
		if ok, err := conn.SetNX(ctx, key, token, o.TTL).Result(); !ok || err != nil {
			t.Fatalf("SET NX %s: %v %v", key, ok, err)
		}
		r := rs.Start(key, token, start, func(ctx context.Context) error { return lockimpl.RenewOwned(ctx, conn, o, key, token) })
		return rs.Lease(r, lockimpl.LeaseFields{Key: key, Token: token,
			Release: func(ctx context.Context) error { return lockimpl.CompareAndDelete(ctx, conn, o, key, token) }})
	}
	a, b := hold("a"), hold("b")
	first := a.Deadline()
	time.Sleep(3 * o.TTL)
	if !s.owns(t, "a", a.Token()) || !s.owns(t, "b", b.Token()) {
		t.Fatal("a renewed key expired")
	}
	if !a.Deadline().After(first) {
		t.Errorf("deadline did not move")
	}
	mustRelease(t, a)
	renewed, _ := ns.count(lockimpl.NoteRenew, nil)
	time.Sleep(3 * o.RenewInterval)
	if s.exists(t, "a") {
		t.Fatal("the released key is back")
	}
	rs.Close()
	if !closed(b.Lost()) {
		t.Fatal("Close left the held lease's Lost open")
	}
	if lost, _ := ns.count(lockimpl.NoteLost, nil); lost != 0 {
		t.Errorf("%d NoteLost; an abandoned lease is not lost", lost)
	}
	if after, _ := ns.count(lockimpl.NoteRenew, nil); after-renewed > 3 {
		t.Errorf("%d renewals after a's release; b's alone are at most 3", after-renewed)
	}
	r := rs.Start("c", "t", env.Clock.Now(), func(context.Context) error { return nil })
	if !closed(r.Lost()) || r.Active() {
		t.Fatal("a renewal started after Close runs")
	}
}

// A renewal on the wire when its lease is released is not cut short (its
// context outlives the stop) and, when the server acknowledged it, is
// reported all the same: the history must see what it did. One refused
// changed nothing, and one unanswered is not reported either.
func TestRenewalsReportLateRenewals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		result error
		notes  int
	}{{"acknowledged", nil, 1}, {"refused", lockimpl.ErrNotOwner, 0}, {"unanswered", lockimpl.ErrIndeterminate, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			ns := &notes{}
			env := lockimpl.Env{Clock: lockimpl.RealClock{}, Note: ns.add,
				Options: lockimpl.Options{TTL: 2 * time.Second, RenewInterval: 20 * time.Millisecond}.WithDefaults()}
			rs, err := lockimpl.NewRenewals(&env, 0)
			if err != nil {
				t.Fatal(err)
			}
			sent, answer := make(chan context.Context, 1), make(chan struct{})
			r := rs.Start("k", "t", env.Clock.Now(), func(ctx context.Context) error {
				select {
				case sent <- ctx:
				default:
					return nil
				}
				<-answer
				return tc.result
			})
			l := rs.Lease(r, lockimpl.LeaseFields{Key: "k", Token: "t", Release: func(context.Context) error { return nil }})
			var cctx context.Context
			select {
			case cctx = <-sent:
			case <-time.After(5 * time.Second):
				t.Fatal("no renewal within 5s")
			}
			mustRelease(t, l)
			if cctx.Err() != nil {
				t.Fatalf("the release cancelled the renewal on the wire: %v", cctx.Err())
			}
			close(answer)
			rs.Close()
			if got, _ := ns.count(lockimpl.NoteRenew, nil); got != tc.notes { // all, whatever their error
				t.Fatalf("%d renewals reported, want %d", got, tc.notes)
			}
		})
	}
}

// WaitAcquire times its wait by Env.Clock: a client clock running 10× fast
// gives up after a tenth of AcquireTimeout, and one that jumps an hour
// ahead gives up at its next pause, under both waits.
func TestWaitAcquireUsesEnvClock(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	for _, wait := range []string{"poll", "pubsub"} {
		t.Run(wait, func(t *testing.T) {
			key := "clock-" + wait
			if err := s.admin.Set(ctx, key, "someone-else", 0).Err(); err != nil {
				t.Fatal(err)
			}
			clock := lockimpl.NewSkewClock()
			lk := s.lockerEnv(t, "simple", lockimpl.Env{Clock: clock,
				Options: lockimpl.Options{TTL: time.Second, AcquireTimeout: 3 * time.Second, Wait: wait}})
			clock.Set(0, 10)
			t0 := time.Now()
			if _, err := lk.Acquire(ctx, key); !errors.Is(err, lockimpl.ErrNotAcquired) {
				t.Fatalf("acquire of a held key: %v", err)
			}
			if el := time.Since(t0); el > 1500*time.Millisecond {
				t.Errorf("fast clock: gave up after %v of real time; 3s on a 10× clock is 300ms", el)
			}
			clock.Set(0, 1)
			lk2 := s.lockerEnv(t, "simple", lockimpl.Env{Clock: clock,
				Options: lockimpl.Options{TTL: time.Second, AcquireTimeout: 20 * time.Second, Wait: wait}})
			go func() { time.Sleep(200 * time.Millisecond); clock.Set(time.Hour, 1) }()
			t0 = time.Now()
			if _, err := lk2.Acquire(ctx, key); !errors.Is(err, lockimpl.ErrNotAcquired) {
				t.Fatalf("acquire of a held key: %v", err)
			}
			if el := time.Since(t0); el > 3*time.Second {
				t.Errorf("clock jump: gave up after %v; the jump came at 200ms of a 20s wait", el)
			}
		})
	}
}
