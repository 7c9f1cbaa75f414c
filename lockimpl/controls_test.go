package lockimpl_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// Fencing tokens strictly increase from one owner to the next, including
// across an expiry, and across lockers.
func TestFencedTokensIncrease(t *testing.T) {
	s := startServer(t)
	a := s.locker(t, "fenced", lockimpl.Options{TTL: 50 * time.Millisecond})
	b := s.locker(t, "fenced", lockimpl.Options{TTL: 5 * time.Second})
	var last uint64
	check := func(l lockimpl.Lease) {
		t.Helper()
		f, ok := l.Fence()
		if !ok || f <= last {
			t.Fatalf("fence %d (ok %v) after %d", f, ok, last)
		}
		last = f
	}
	for range 10 {
		la := mustAcquire(t, a, "fence")
		check(la)
		mustRelease(t, la)
		lb := mustAcquire(t, b, "fence")
		check(lb)
		mustRelease(t, lb)
	}
	mustAcquire(t, a, "fence") // never released: expires
	s.awaitGone(t, "fence")
	lb := mustAcquire(t, b, "fence")
	if f, _ := lb.Fence(); f != last+2 {
		t.Fatalf("fence %d after an expired holder's %d", f, last+1)
	}
	check(lb)
	// A refused acquire does not consume a token.
	if _, err := a.TryAcquire(context.Background(), "fence"); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatal(err)
	}
	mustRelease(t, lb)
	if f, _ := mustAcquire(t, a, "fence").Fence(); f != last+1 {
		t.Fatalf("fence %d, want %d: a refused acquire consumed one", f, last+1)
	}
	if _, fenced := mustAcquire(t, s.locker(t, "simple", lockimpl.Options{}), "plain").Fence(); fenced {
		t.Fatal("simple claims a fence")
	}
}

// With no replica, WAIT 1 cannot be satisfied: the acquire fails with
// ErrNotReplicated (a kind of ErrNotAcquired, not indeterminate) and the key
// is given back. With Replicas 0 (only reachable through the factory: the
// option's default is 1) it succeeds.
func TestSimpleWaitNoReplica(t *testing.T) {
	s := startServer(t)
	o := lockimpl.Options{TTL: 5 * time.Second, ReplicaTimeout: 30 * time.Millisecond, AcquireTimeout: 150 * time.Millisecond}
	lk := s.locker(t, "simple-wait", o)
	_, err := lk.TryAcquire(context.Background(), "wait")
	if !errors.Is(err, lockimpl.ErrNotReplicated) || !errors.Is(err, lockimpl.ErrNotAcquired) || lockimpl.IsIndeterminate(err) {
		t.Fatalf("TryAcquire without a replica: %v", err)
	}
	if s.exists(t, "wait") {
		t.Fatal("unreplicated key not given back")
	}
	if _, err := lk.Acquire(context.Background(), "wait"); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("Acquire without a replica: %v", err)
	}
	if s.exists(t, "wait") {
		t.Fatal("unreplicated key not given back by Acquire")
	}

	_, factory, err := lockimpl.Lookup("simple-wait")
	if err != nil {
		t.Fatal(err)
	}
	env := lockimpl.Env{Options: o.WithDefaults(), Clock: lockimpl.RealClock{},
		Conns: s.lockerEnvConns()}
	env.Options.Replicas = 0
	lk0, err := factory(env)
	if err != nil {
		t.Fatal(err)
	}
	l := mustAcquire(t, lk0, "wait")
	if !s.owns(t, "wait", l.Token()) {
		t.Fatal("key not set")
	}
	mustRelease(t, l)
}

// A crash between SETNX and EXPIRE (here: the EXPIRE never leaves the
// client) leaves a key with no TTL that nobody can ever acquire.
func TestSetnxExpireCrashBetween(t *testing.T) {
	s := startServer(t)
	errCrash := errors.New("client crashed")
	var armed atomic.Bool
	a := s.locker(t, "setnx-expire", lockimpl.Options{TTL: 50 * time.Millisecond}, cmdHook(func(_ context.Context, names []string) error {
		if armed.Load() && names[0] == "pexpire" {
			return errCrash
		}
		return nil
	}))
	b := s.locker(t, "setnx-expire", lockimpl.Options{TTL: 50 * time.Millisecond})
	// Without the crash the key has its TTL.
	l := mustAcquire(t, a, "crash")
	if ttl := s.admin.PTTL(context.Background(), "crash").Val(); ttl <= 0 {
		t.Fatalf("PTTL %v after a normal acquire", ttl)
	}
	mustRelease(t, l)
	armed.Store(true)
	if _, err := a.TryAcquire(context.Background(), "crash"); !errors.Is(err, errCrash) {
		t.Fatalf("acquire with the crash: %v", err)
	}
	if ttl := s.admin.PTTL(context.Background(), "crash").Val(); ttl != -1 {
		t.Fatalf("PTTL %v, want -1 (no expiry)", ttl)
	}
	time.Sleep(150 * time.Millisecond) // 3×TTL
	if _, err := b.TryAcquire(context.Background(), "crash"); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("after 3×TTL: %v, want ErrNotAcquired forever", err)
	}
}

// Expiry between the release's check and its delete, driven by a hook that
// holds the DEL until the key expired and b acquired: get-del deletes b's
// lock and reports success; watch-unlock's EXEC is aborted and it refuses.
func TestReleaseCheckThenDeleteRace(t *testing.T) {
	s := startServer(t)
	for _, tc := range []struct {
		name      string
		deletesB  bool
		wantError error
	}{{"get-del", true, nil}, {"watch-unlock", false, lockimpl.ErrNotOwner}} {
		t.Run(tc.name, func(t *testing.T) {
			key := "race-" + tc.name
			b := s.locker(t, tc.name, lockimpl.Options{TTL: 5 * time.Second})
			var lb lockimpl.Lease
			var armed atomic.Bool
			// The command timeout outlasts the stall, as a pause would.
			o := lockimpl.Options{TTL: 50 * time.Millisecond, CommandTimeout: 2 * time.Second}
			a := s.locker(t, tc.name, o, beforeFirst("del", &armed, func() {
				s.awaitGone(t, key)
				lb = mustAcquire(t, b, key)
			}))
			la := mustAcquire(t, a, key)
			armed.Store(true)
			err := la.Release(context.Background())
			if lb == nil {
				t.Fatal("the hook did not run: no DEL sent")
			}
			if !errors.Is(err, tc.wantError) || (err != nil && tc.wantError == nil) {
				t.Fatalf("release: %v, want %v", err, tc.wantError)
			}
			if got := s.owns(t, key, lb.Token()); got == tc.deletesB {
				t.Fatalf("b still owns the key: %v", got)
			}
			if tc.deletesB {
				// b believes it holds, yet a third client gets the key.
				c := s.locker(t, tc.name, lockimpl.Options{TTL: 5 * time.Second})
				mustAcquire(t, c, key)
				if err := lb.Release(context.Background()); !errors.Is(err, lockimpl.ErrNotOwner) {
					t.Fatalf("b's release: %v, want ErrNotOwner", err)
				}
			}
		})
	}
}

// watchdog-fixed-timer renews every 1733 ms whatever the TTL, and tells its
// holder nothing: with a 300 ms TTL the key is gone long before the first
// renewal, which is refused and only reported as a note, while the lease
// still has no deadline and no Lost. With a TTL above the timer it renews.
func TestFixedTimerWatchdogNeverTells(t *testing.T) {
	s := startServer(t)
	notes := make(chan lockimpl.Note, 8)
	env := lockimpl.Env{Options: lockimpl.Options{TTL: 300 * time.Millisecond}, Note: func(n lockimpl.Note) { notes <- n }}
	lk := s.lockerEnv(t, "watchdog-fixed-timer", env)
	l := mustAcquire(t, lk, "ft")
	if !l.Deadline().IsZero() || l.Lost() != nil {
		t.Fatalf("deadline %v lost %v: the control must promise nothing", l.Deadline(), l.Lost())
	}
	s.awaitGone(t, "ft")
	select {
	case n := <-notes:
		if !errors.Is(n.Err, lockimpl.ErrNotOwner) {
			t.Fatalf("first renewal: %v, want refused (the key expired)", n.Err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no renewal within 3 s")
	}
	mustRelease(t, mustAcquire(t, lk, "ft2")) // a released lease stops renewing
	long := s.lockerEnv(t, "watchdog-fixed-timer", lockimpl.Env{Options: lockimpl.Options{TTL: 2500 * time.Millisecond}, Note: func(n lockimpl.Note) { notes <- n }})
	l2 := mustAcquire(t, long, "ft3")
	deadline := time.After(3 * time.Second)
	for got := false; !got; {
		select {
		case n := <-notes:
			if n.Key != "ft3" {
				continue // "ft" is never released: its refused renewals go on
			}
			if n.Err != nil {
				t.Fatalf("renewal of a held key: %+v", n)
			}
			got = true
		case <-deadline:
			t.Fatal("no renewal within 3 s")
		}
	}
	if !s.owns(t, "ft3", l2.Token()) {
		t.Fatal("renewed key not owned")
	}
}

// renew-no-owner-check renews by a plain SET: when another client holds
// the key by the time its renewal runs (its own key expired and was taken),
// the renewal overwrites that client's key with its own token and reports
// success. The correct watchdog's renewal is refused in the same place.
func TestBlindRenewalOverwritesTheNewOwner(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	notes := make(chan lockimpl.Note, 8)
	o := lockimpl.Options{TTL: 2 * time.Second, RenewInterval: 300 * time.Millisecond}
	lk := s.lockerEnv(t, "renew-no-owner-check", lockimpl.Env{Options: o, Note: func(n lockimpl.Note) { notes <- n }})
	l := mustAcquire(t, lk, "br")
	// Another client takes the key as if ours had expired.
	if err := s.admin.Set(ctx, "br", "other-owner", 2*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-notes:
		if n.Err != nil {
			t.Fatalf("renewal: %v, want a (blind) success", n.Err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no renewal within 3 s")
	}
	if !s.owns(t, "br", l.Token()) {
		t.Fatal("the blind renewal did not overwrite the other owner's key")
	}
	mustRelease(t, l)
}

// renew-false-success checks the owner like the correct watchdog but
// reports the refusal as a success: the key stays the other client's, the
// lease is not lost, and its deadline moves on.
func TestRefusedExtensionReportedAsSuccess(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	notes := make(chan lockimpl.Note, 8)
	o := lockimpl.Options{TTL: 2 * time.Second, RenewInterval: 300 * time.Millisecond}
	lk := s.lockerEnv(t, "renew-false-success", lockimpl.Env{Options: o, Note: func(n lockimpl.Note) { notes <- n }})
	l := mustAcquire(t, lk, "fs")
	before := l.Deadline()
	if err := s.admin.Set(ctx, "fs", "other-owner", 2*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-notes:
		if n.Err != nil {
			t.Fatalf("renewal: %v, want the refusal reported as success", n.Err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no renewal within 3 s")
	}
	if s.owns(t, "fs", l.Token()) || !s.owns(t, "fs", "other-owner") {
		t.Fatal("the owner-checked extension changed the other client's key")
	}
	select {
	case <-l.Lost():
		t.Fatal("the lease was declared lost: the refusal was not hidden")
	default:
	}
	if !l.Deadline().After(before) {
		t.Fatalf("deadline %v did not move past %v", l.Deadline(), before)
	}
}

// deadline-from-reply counts its TTL from the SET's reply: a reply held
// 300 ms (TTL 200 ms) arrives after the key expired at the server, and
// simple's lease is over on arrival while deadline-from-reply's still has
// about a TTL to run.
func TestDeadlineFromReplyOutlivesItsKey(t *testing.T) {
	s := startServer(t)
	o := lockimpl.Options{TTL: 200 * time.Millisecond, CommandTimeout: time.Second}
	for _, tc := range []struct {
		name    string
		outlive bool
	}{{"simple", false}, {"deadline-from-reply", true}} {
		lk := s.locker(t, tc.name, o, delayHook(300*time.Millisecond))
		key := "reply-" + tc.name
		l := mustAcquire(t, lk, key)
		if s.exists(t, key) {
			t.Fatalf("%s: key still at the server 300 ms after its SET (TTL 200 ms)", tc.name)
		}
		left := time.Until(l.Deadline())
		if got := left > 100*time.Millisecond; got != tc.outlive {
			t.Errorf("%s: lease has %v left after its key expired at the server", tc.name, left)
		}
	}
}

// server-clock-deadline counts its TTL from the server's clock and checks it
// with the client's: a client clock 1 s behind believes its lease for
// TTL + 1 s, and still does when the key has expired; simple, on the same
// skewed clock, does not.
func TestServerClockDeadlineOutlivesItsKey(t *testing.T) {
	s := startServer(t)
	for _, tc := range []struct {
		name    string
		outlive bool
	}{{"simple", false}, {"server-clock-deadline", true}} {
		clock := lockimpl.NewSkewClock()
		clock.Set(-time.Second, 1)
		lk := s.lockerEnv(t, tc.name, lockimpl.Env{Clock: clock, Options: lockimpl.Options{TTL: 200 * time.Millisecond}})
		key := "clock-" + tc.name
		l := mustAcquire(t, lk, key)
		s.awaitGone(t, key)
		left := l.Deadline().Sub(clock.Now())
		if got := left > 500*time.Millisecond; got != tc.outlive {
			t.Errorf("%s: lease has %v left by the client's clock after its key expired", tc.name, left)
		}
	}
}

// unknownHook fails the listed commands as a timeout does, before they reach
// the server, while on: their outcome is unknown to the client.
type unknownHook struct {
	cmds []string
	on   *atomic.Bool
}

func (unknownHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (unknownHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h unknownHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.on.Load() && slices.Contains(h.cmds, cmd.Name()) {
			cmd.SetErr(context.DeadlineExceeded)
			return context.DeadlineExceeded
		}
		return next(ctx, cmd)
	}
}

// unknown-acquire-held takes a SET that timed out as acquired: it returns a
// lease on a key another owner holds, where simple reports the outcome
// unknown.
func TestUnknownAcquireTakenAsHeld(t *testing.T) {
	s := startServer(t)
	on := &atomic.Bool{}
	on.Store(true)
	if err := s.admin.Set(context.Background(), "ua", "other-owner", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	o := lockimpl.Options{TTL: 2 * time.Second}
	_, err := s.locker(t, "simple", o, unknownHook{[]string{"set"}, on}).TryAcquire(context.Background(), "ua")
	if !lockimpl.IsIndeterminate(err) {
		t.Fatalf("simple: acquire with its SET timed out: %v, want an indeterminate error", err)
	}
	l, err := s.locker(t, "unknown-acquire-held", o, unknownHook{[]string{"set"}, on}).TryAcquire(context.Background(), "ua")
	if err != nil || l == nil {
		t.Fatalf("unknown-acquire-held: %v, want the timed-out SET taken as acquired", err)
	}
	if !s.owns(t, "ua", "other-owner") {
		t.Fatal("the other owner lost its key")
	}
}

// renew-timeout-ack counts a renewal whose EVAL timed out as acknowledged:
// it reports the renewal without an error and moves its deadline, although
// the key was never extended at the server.
func TestTimedOutRenewalCountedAsAcknowledged(t *testing.T) {
	s := startServer(t)
	on := &atomic.Bool{}
	notes := make(chan lockimpl.Note, 8)
	o := lockimpl.Options{TTL: 2 * time.Second, RenewInterval: 300 * time.Millisecond}
	lk := s.lockerEnv(t, "renew-timeout-ack", lockimpl.Env{Options: o, Note: func(n lockimpl.Note) { notes <- n }},
		unknownHook{[]string{"eval", "evalsha"}, on})
	l := mustAcquire(t, lk, "rt")
	before := l.Deadline()
	on.Store(true)
	select {
	case n := <-notes:
		if n.Err != nil {
			t.Fatalf("renewal: %v, want the timeout reported as acknowledged", n.Err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no renewal within 3 s")
	}
	if !l.Deadline().After(before) {
		t.Fatalf("deadline %v did not move past %v", l.Deadline(), before)
	}
	left, err := s.admin.PTTL(context.Background(), "rt").Result()
	if err != nil {
		t.Fatal(err)
	}
	if left > o.TTL-250*time.Millisecond {
		t.Fatalf("the key's TTL is %v: a renewal reached the server", left)
	}
	on.Store(false)
}

// renew-after-cancel, cancelled after its SET took the key, returns the
// caller's error and leaves its renewal running: the key is still there
// and renewed three TTLs later, with nobody holding it. The correct
// watchdog, cancelled at the same moment, hands out the lease it took.
func TestCancelledAcquireLeavesItsRenewalRunning(t *testing.T) {
	s := startServer(t)
	o := lockimpl.Options{TTL: 300 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	// The caller goes away while the SET is on the wire: cancelled by a
	// hook on the SET's reply, as the cancel fault does in-acquire.
	lk := s.locker(t, "renew-after-cancel", o, afterSet(cancel))
	if l, err := lk.Acquire(ctx, "ca"); err == nil || l != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire = %v, %v; want the caller's context.Canceled", l, err)
	}
	time.Sleep(3 * o.TTL)
	if ttl := s.admin.PTTL(context.Background(), "ca").Val(); ttl <= 0 {
		t.Fatalf("the key is gone (PTTL %v) three TTLs after the cancelled acquire: the renewal did not leak", ttl)
	}
	if _, err := s.locker(t, "simple", o).TryAcquire(context.Background(), "ca"); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("another client's acquire = %v, want ErrNotAcquired (the leaked renewal keeps the key)", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	wd := s.locker(t, "watchdog", o, afterSet(cancel), afterEval(cancel))
	l, err := wd.Acquire(ctx, "wd")
	if err != nil {
		t.Fatalf("watchdog cancelled after its script took the key: %v, want the lease it took", err)
	}
	mustRelease(t, l)
}

// afterSet and afterEval are go-redis hooks that call fn after a SET (an
// EVALSHA/EVAL) succeeded: where the cancel fault cancels in-acquire.
func afterSet(fn func()) redis.Hook  { return afterCmd{fn: fn, names: []string{"set"}} }
func afterEval(fn func()) redis.Hook { return afterCmd{fn: fn, names: []string{"evalsha", "eval"}} }

type afterCmd struct {
	fn    func()
	names []string
}

func (h afterCmd) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h afterCmd) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && slices.Contains(h.names, cmd.Name()) {
			h.fn()
		}
		return err
	}
}
func (h afterCmd) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// release-on-success, released on the exception path (a ThrowReport in the
// release's context, as the throw fault gives), releases nothing and its
// renewal goes on: the key is still there three TTLs later. Released
// normally, it frees the key, as the correct watchdog does either way.
func TestReleaseOnTheExceptionPathLeavesTheRenewalRunning(t *testing.T) {
	s := startServer(t)
	o := lockimpl.Options{TTL: 300 * time.Millisecond}
	thrown := lockimpl.WithThrow(context.Background(), lockimpl.NewThrowReport("boom"))
	lk := s.locker(t, "release-on-success", o)
	l, err := lk.Acquire(context.Background(), "rs")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(thrown); err != nil {
		t.Fatalf("release on the exception path: %v, want nil (the helper returned the error)", err)
	}
	time.Sleep(3 * o.TTL)
	if ttl := s.admin.PTTL(context.Background(), "rs").Val(); ttl <= 0 {
		t.Fatalf("the key is gone (PTTL %v) three TTLs after the release on the exception path: the renewal did not leak", ttl)
	}
	l2, err := lk.Acquire(context.Background(), "rs2")
	if err != nil {
		t.Fatal(err)
	}
	mustRelease(t, l2)
	if n := s.admin.Exists(context.Background(), "rs2").Val(); n != 0 {
		t.Fatal("released off the exception path, the key stayed")
	}
	wd := s.locker(t, "watchdog", o)
	l3, err := wd.Acquire(context.Background(), "wd")
	if err != nil {
		t.Fatal(err)
	}
	if err := l3.Release(thrown); err != nil || s.admin.Exists(context.Background(), "wd").Val() != 0 {
		t.Fatalf("watchdog released on the exception path: %v, the key still there: it must free it", err)
	}
}
