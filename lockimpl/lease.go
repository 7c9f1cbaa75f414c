package lockimpl

import (
	"context"
	"fmt"
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
	// Lost is closed when the lock learns the lease is gone.
	Lost <-chan struct{}
	// Depth is the hold count after the acquire (reentrant locks).
	Depth int
	// Renewal, when set, supplies Deadline and Lost (they move with it).
	Renewal *Renewal
	// Release gives the lock up (see Lease.Release). Required.
	Release func(ctx context.Context) error
}

// NewLease returns the Lease described by f, for locks that need no lease
// type of their own.
func NewLease(f LeaseFields) Lease {
	l := &basicLease{key: f.Key, token: f.Token, fence: f.Fence, fenced: f.Fenced, deadline: f.Deadline,
		lost: f.Lost, depth: f.Depth, release: f.Release}
	if f.Renewal != nil {
		l.lost = f.Renewal.Lost()
		return &renewedLease{basicLease: *l, r: f.Renewal}
	}
	return l
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
}

func (l *basicLease) Key() string                       { return l.key }
func (l *basicLease) Token() string                     { return l.token }
func (l *basicLease) Fence() (uint64, bool)             { return l.fence, l.fenced }
func (l *basicLease) Deadline() time.Time               { return l.deadline }
func (l *basicLease) Lost() <-chan struct{}             { return l.lost }
func (l *basicLease) Depth() int                        { return max(l.depth, 1) }
func (l *basicLease) Release(ctx context.Context) error { return l.release(ctx) }

// renewedLease reads its deadline from its renewal, which moves it.
type renewedLease struct {
	basicLease
	r *Renewal
}

func (l *renewedLease) Deadline() time.Time { return l.r.Deadline() }

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
