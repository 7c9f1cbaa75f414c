package lockimpl

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// LeaseFields describe a lease for NewLease. Zero fields mean: no fence, no
// deadline promised, no way to learn of a loss, depth 1.
type LeaseFields struct {
	Key, Token string
	// Fence is the fencing token; Fenced says the lock issues them.
	Fence  uint64
	Fenced bool
	// Deadline is the validity promised, by the client's clock (Env.Clock):
	// typically when the acquiring command was sent + TTL.
	Deadline time.Time
	// DeadlineFunc, when set, is read at every Lease.Deadline instead of
	// Deadline: the deadline of a lease that a lock renews with a loop of
	// its own moves with it. It may be called from any goroutine.
	DeadlineFunc func() time.Time
	// Lost is closed when the lock learns the lease is gone.
	Lost <-chan struct{}
	// Depth is the hold count after the acquire (reentrant locks).
	Depth int
	// Renewal, when set, supplies the deadline and Lost (they move with
	// it): DeadlineFunc is its Deadline.
	Renewal *Renewal
	// Release gives the lock up (see Lease.Release). Required.
	Release func(ctx context.Context) error
}

// NewLease returns the Lease described by f, for locks that need no lease
// type of their own. Its Release acts once: a second call returns an error
// wrapping ErrNotOwner without calling f.Release, so that a reentrant
// lease released twice does not undo a level held by another lease.
func NewLease(f LeaseFields) Lease {
	l := &basicLease{key: f.Key, token: f.Token, fence: f.Fence, fenced: f.Fenced, deadline: f.Deadline,
		lost: f.Lost, depth: f.Depth, release: releaseOnce(f.Key, f.Release)}
	if f.Renewal != nil {
		l.lost = f.Renewal.Lost()
		f.DeadlineFunc = f.Renewal.Deadline
	}
	if f.DeadlineFunc != nil {
		return &movingLease{basicLease: *l, deadline: f.DeadlineFunc}
	}
	return l
}

// releaseOnce makes a lease's Release act once: a second call would undo a
// level of a reentrant hold that is not this lease's.
func releaseOnce(key string, release func(context.Context) error) func(context.Context) error {
	var done atomic.Bool
	return func(ctx context.Context) error {
		if done.Swap(true) {
			return fmt.Errorf("release %s: lease already released: %w", key, ErrNotOwner)
		}
		return release(ctx)
	}
}

// basicLease is the Lease most implementations return: fixed fields plus a
// release function.
type basicLease struct {
	key      string
	token    string
	fence    uint64
	fenced   bool
	deadline time.Time
	lost     <-chan struct{}
	depth    int
	release  func(ctx context.Context) error
	// Without release: unlock(ctx, base, l) releases, with the token
	// boxed once as tokenArg (no closure a lease).
	base     *nodeBase
	unlock   func(ctx context.Context, b *nodeBase, l *basicLease) error
	tokenArg any
}

func (l *basicLease) Key() string           { return l.key }
func (l *basicLease) Token() string         { return l.token }
func (l *basicLease) Fence() (uint64, bool) { return l.fence, l.fenced }
func (l *basicLease) Deadline() time.Time   { return l.deadline }
func (l *basicLease) Lost() <-chan struct{} { return l.lost }
func (l *basicLease) Depth() int            { return max(l.depth, 1) }
func (l *basicLease) Release(ctx context.Context) error {
	if l.release != nil {
		return l.release(ctx)
	}
	return l.unlock(ctx, l.base, l)
}

// releaseFunc is l's release as a function, for a lock that wraps it
// (setting release, which Release prefers to unlock).
func (l *basicLease) releaseFunc() func(context.Context) error {
	if l.release != nil {
		return l.release
	}
	return func(ctx context.Context) error { return l.unlock(ctx, l.base, l) }
}

// movingLease reads its deadline from a function (a renewal moves it).
type movingLease struct {
	basicLease
	deadline func() time.Time
}

func (l *movingLease) Deadline() time.Time { return l.deadline() }

// Classify turns a command error into the API's errors: an indeterminate
// outcome (IsIndeterminate: timeout, cancellation, broken connection) wraps
// ErrIndeterminate, so the harness treats the command as possibly applied;
// other errors are returned with op and key as context. nil stays nil.
// Refusals (the script said "not the owner") are not errors of the command:
// return ErrNotOwner for them yourself.
func Classify(op, key string, err error) error {
	if err == nil {
		return nil
	}
	if IsIndeterminate(err) {
		return fmt.Errorf("%s %s: %w: %w", op, key, ErrIndeterminate, err)
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}
