package lockimpl_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// notes collects a lock's background events.
type notes struct {
	mu  sync.Mutex
	all []lockimpl.Note
}

func (n *notes) add(x lockimpl.Note) {
	n.mu.Lock()
	n.all = append(n.all, x)
	n.mu.Unlock()
}

// count returns how many notes of kind there are, and how many of them
// carry an error matching target (nil target: no error).
func (n *notes) count(kind lockimpl.NoteKind, target error) (all, matching int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, x := range n.all {
		if x.Kind != kind {
			continue
		}
		all++
		if (target == nil && x.Err == nil) || (target != nil && errors.Is(x.Err, target)) {
			matching++
		}
	}
	return all, matching
}

// last returns the last note of kind.
func (n *notes) last(kind lockimpl.NoteKind) lockimpl.Note {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := len(n.all) - 1; i >= 0; i-- {
		if n.all[i].Kind == kind {
			return n.all[i]
		}
	}
	return lockimpl.Note{}
}

func watchdogEnv(ttl time.Duration, ns *notes) lockimpl.Env {
	return lockimpl.Env{Options: lockimpl.Options{TTL: ttl}, Clock: lockimpl.NewSkewClock(), Note: ns.add}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// While held, renewals keep the key past several TTLs and move the deadline;
// the final release stops them.
func TestWatchdogKeepsAlive(t *testing.T) {
	s := startServer(t)
	const ttl = 300 * time.Millisecond
	ns := &notes{}
	a := s.lockerEnv(t, "watchdog", watchdogEnv(ttl, ns))
	b := s.locker(t, "watchdog", lockimpl.Options{TTL: ttl})
	key := "alive"
	l := mustAcquire(t, a, key)
	inner := mustAcquire(t, a, key)
	first := l.Deadline()
	if inner.Deadline().Before(first) {
		t.Fatal("nested lease has an earlier deadline")
	}
	time.Sleep(4 * ttl)
	if !s.owns(t, key, l.Token()) {
		t.Fatal("key expired while held")
	}
	if _, err := b.TryAcquire(context.Background(), key); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("other client: %v, want ErrNotAcquired", err)
	}
	if closed(l.Lost()) {
		t.Fatal("Lost closed while renewals succeed")
	}
	if d := l.Deadline(); !d.After(first.Add(2 * ttl)) {
		t.Fatalf("deadline %v did not advance past first %v + 2×TTL", d, first)
	}
	if !inner.Deadline().Equal(l.Deadline()) {
		t.Fatal("nested leases of one hold disagree on the deadline")
	}
	all, ok := ns.count(lockimpl.NoteRenew, nil)
	if ok < 6 || ok != all {
		t.Fatalf("%d renewals, %d acknowledged; want ≥6, all acknowledged", all, ok)
	}
	mustRelease(t, inner)
	time.Sleep(ttl) // still renewed at depth 1
	if !s.owns(t, key, l.Token()) {
		t.Fatal("key expired at depth 1")
	}
	mustRelease(t, l)
	before, _ := ns.count(lockimpl.NoteRenew, nil)
	time.Sleep(ttl)
	if after, _ := ns.count(lockimpl.NoteRenew, nil); after != before {
		t.Fatalf("%d renewals after the final release", after-before)
	}
	if closed(l.Lost()) {
		t.Fatal("Lost closed by a release")
	}
	if lost, _ := ns.count(lockimpl.NoteLost, nil); lost != 0 {
		t.Fatal("NoteLost without a loss")
	}
}

// The key deleted behind the holder's back: the next renewal is refused and
// Lost closes at once, reported as NoteLost with ErrNotOwner.
func TestWatchdogLostWhenKeyDeleted(t *testing.T) {
	s := startServer(t)
	const ttl = 300 * time.Millisecond
	ns := &notes{}
	a := s.lockerEnv(t, "watchdog", watchdogEnv(ttl, ns))
	l := mustAcquire(t, a, "deleted")
	if err := s.admin.Del(context.Background(), "deleted").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Lost():
	case <-time.After(ttl): // renewals every TTL/3: the next one is refused
		t.Fatal("Lost not closed after the key was deleted")
	}
	if _, n := ns.count(lockimpl.NoteLost, lockimpl.ErrNotOwner); n != 1 {
		t.Fatalf("%d NoteLost with ErrNotOwner, want 1", n)
	}
	if _, n := ns.count(lockimpl.NoteRenew, lockimpl.ErrNotOwner); n != 1 {
		t.Fatalf("%d refused renewals noted, want 1", n)
	}
	if err := l.Release(context.Background()); !errors.Is(err, lockimpl.ErrNotOwner) {
		t.Fatalf("release of a lost lease: %v, want ErrNotOwner", err)
	}
	// The locker is usable again: a new hold with its own renewal.
	l2 := mustAcquire(t, a, "deleted")
	if l2.Depth() != 1 || closed(l2.Lost()) {
		t.Fatal("a new hold after a loss should start fresh")
	}
	mustRelease(t, l2)
}

// Renewals that get no answer: Lost closes by the local deadline (last
// acknowledged renewal sent + TTL), before the server's TTL can run out.
func TestWatchdogLostWhenRenewalsFail(t *testing.T) {
	s := startServer(t)
	const ttl = 200 * time.Millisecond
	var cut atomic.Bool
	cutErr := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("test cut")}
	hook := cmdHook(func(context.Context, []string) error {
		if cut.Load() {
			return cutErr
		}
		return nil
	})
	ns := &notes{}
	env := watchdogEnv(ttl, ns)
	a := s.lockerEnv(t, "watchdog", env, hook)
	l := mustAcquire(t, a, "cut")
	time.Sleep(ttl / 2) // a renewal or so
	cut.Store(true)
	d := l.Deadline()
	select {
	case <-l.Lost():
	case <-time.After(2 * ttl):
		t.Fatal("Lost not closed within 2×TTL of the cut")
	}
	at := ns.last(lockimpl.NoteLost).End
	if !l.Deadline().Equal(d) {
		t.Fatal("deadline moved without an acknowledged renewal")
	}
	// A busy machine wakes timers late; TestWatchdogLostByDeadline checks
	// the exact bound with a manual clock.
	if at.After(d.Add(ttl/4)) || at.Before(d.Add(-ttl/3)) {
		t.Fatalf("Lost closed at %v, deadline %v", at.Format("05.000"), d.Format("05.000"))
	}
	if !s.owns(t, "cut", l.Token()) {
		t.Log("note: server key already expired when checked (slow scheduler)")
	}
	if all, indet := ns.count(lockimpl.NoteRenew, lockimpl.ErrIndeterminate); indet == 0 || all < indet {
		t.Fatalf("renewal notes %d, indeterminate %d", all, indet)
	}
	if lost, _ := ns.count(lockimpl.NoteLost, lockimpl.ErrLeaseLost); lost != 1 {
		t.Fatal("want one NoteLost for the deadline")
	}
	before, _ := ns.count(lockimpl.NoteRenew, nil)
	time.Sleep(ttl)
	if after, _ := ns.count(lockimpl.NoteRenew, nil); after > before+1 { // one may be in flight
		t.Fatalf("%d renewals after the lease was declared lost", after-before)
	}
}

// Close stops the renewals: the key then expires on the server, and the
// lease says it is no longer maintained.
func TestWatchdogClose(t *testing.T) {
	s := startServer(t)
	const ttl = 100 * time.Millisecond
	a := s.locker(t, "watchdog", lockimpl.Options{TTL: ttl})
	l := mustAcquire(t, a, "closed")
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !closed(l.Lost()) {
		t.Fatal("Lost open after Close")
	}
	s.awaitGone(t, "closed")
	if _, err := a.TryAcquire(context.Background(), "closed"); err == nil {
		t.Fatal("acquire on a closed locker")
	}
}

// manualClock moves only when the test says so: the watchdog's timing is
// then exact whatever the machine's load.
type manualClock struct {
	mu       sync.Mutex
	now      time.Time
	sleepers []manualSleeper
}

type manualSleeper struct {
	until time.Time
	wake  chan struct{}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	c.mu.Lock()
	sl := manualSleeper{until: c.now.Add(d), wake: make(chan struct{})}
	c.sleepers = append(c.sleepers, sl)
	c.mu.Unlock()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-sl.wake:
		return nil
	}
}

// advance waits until n goroutines sleep on the clock (so that none
// registers its sleep after the move), moves the clock, and wakes the
// sleepers it passed.
func (c *manualClock) advance(t *testing.T, n int, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		if len(c.sleepers) >= n {
			break
		}
		c.mu.Unlock()
		if time.Now().After(end) {
			t.Fatalf("fewer than %d sleepers after 5s", n)
		}
	}
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	keep := c.sleepers[:0]
	for _, sl := range c.sleepers {
		if sl.until.After(c.now) {
			keep = append(keep, sl)
		} else {
			close(sl.wake)
		}
	}
	c.sleepers = keep
}

// awaitNotes waits (in real time) until there are n notes of kind.
func awaitNotes(t *testing.T, ns *notes, kind lockimpl.NoteKind, n int) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if all, _ := ns.count(kind, nil); all >= n {
			return
		}
	}
	t.Fatalf("fewer than %d %s notes after 5s", n, kind)
}

// With renewals failing, Lost closes before the local deadline (the last
// acknowledged renewal's send time + TTL) and not earlier than it must:
// checked on a manual clock, so the bound is exact.
func TestWatchdogLostByDeadline(t *testing.T) {
	s := startServer(t)
	const ttl, every = 300 * time.Millisecond, 100 * time.Millisecond
	var cut atomic.Bool
	hook := cmdHook(func(context.Context, []string) error {
		if cut.Load() {
			return &net.OpError{Op: "read", Net: "tcp", Err: errors.New("test cut")}
		}
		return nil
	})
	clock := &manualClock{now: time.Unix(1000, 0)}
	ns := &notes{}
	env := lockimpl.Env{Options: lockimpl.Options{TTL: ttl, RenewInterval: every}, Clock: clock, Note: ns.add}
	l := mustAcquire(t, s.lockerEnv(t, "watchdog", env, hook), "manual")
	t0 := clock.Now()
	if !l.Deadline().Equal(t0.Add(ttl)) {
		t.Fatalf("deadline %v, want acquire time + TTL", l.Deadline().Sub(t0))
	}
	clock.advance(t, 2, every) // the first renewal, sent at t0+100ms, acknowledged
	awaitNotes(t, ns, lockimpl.NoteRenew, 1)
	clock.advance(t, 2, 0) // and its goroutine asleep again
	if want := t0.Add(every + ttl); !l.Deadline().Equal(want) {
		t.Fatalf("deadline t0+%v after a renewal sent at t0+%v, want t0+%v", l.Deadline().Sub(t0), every, every+ttl)
	}
	cut.Store(true)
	clock.advance(t, 2, every) // t0+200: renewal fails
	awaitNotes(t, ns, lockimpl.NoteRenew, 2)
	clock.advance(t, 2, every) // t0+300: renewal fails; past the first TTL, not the deadline
	awaitNotes(t, ns, lockimpl.NoteRenew, 3)
	clock.advance(t, 2, every-20*time.Millisecond) // t0+380
	time.Sleep(50 * time.Millisecond)
	if closed(l.Lost()) {
		t.Fatalf("Lost closed at t0+380ms, before the deadline t0+400ms needs it (guard 10ms)")
	}
	clock.advance(t, 2, 10*time.Millisecond) // t0+390: deadline − TTL/20
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost not closed at deadline − guard")
	}
	if at := ns.last(lockimpl.NoteLost).End; !at.Equal(t0.Add(390 * time.Millisecond)) {
		t.Fatalf("lost at t0+%v", at.Sub(t0))
	}
	if _, acked := ns.count(lockimpl.NoteRenew, nil); acked != 1 {
		t.Fatalf("%d acknowledged renewals, want 1", acked)
	}
}
