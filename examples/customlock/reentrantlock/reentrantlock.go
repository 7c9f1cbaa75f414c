// Package reentrantlock is a reentrant lock written outside lockchaos with
// its building blocks: a hash key = {owner: hold count} changed only by the
// standard reentrant scripts (lockimpl.AcquireReentrant takes a free key or
// one more level of our own and resets the TTL; lockimpl.ReleaseReentrant
// undoes one level, checking the owner, and deletes the key at zero). The
// owner is the Locker's identity, so one client re-enters what it holds.
// Importing it registers "reentrant-lock".
package reentrantlock

import (
	"context"

	"github.com/lockchaos/lockchaos/lockimpl"
)

func init() {
	lockimpl.Register(lockimpl.Info{
		Name:        "reentrant-lock",
		Description: "example: hash field = owner, value = hold count, by the exported reentrant scripts",
		Reentrant:   true, // the workload then re-enters it, and the reentrant scenarios run
	}, New)
}

// New builds one client's reentrant-lock, with an owner identity of its own.
func New(env lockimpl.Env) (lockimpl.Locker, error) {
	return &Lock{env: env, owner: lockimpl.NewToken()}, nil
}

// Lock is one client's handle: every lease it takes is held by owner.
type Lock struct {
	env   lockimpl.Env
	owner string
}

// Reentrant says the owner may acquire a key it holds again (it must agree
// with Info.Reentrant).
func (l *Lock) Reentrant() bool { return true }

// Acquire waits for the key (pub/sub wake-ups, polling as fallback).
func (l *Lock) Acquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	return lockimpl.WaitAcquire(ctx, &l.env, key, func(ctx context.Context) (lockimpl.Lease, error) {
		return l.TryAcquire(ctx, key)
	})
}

// TryAcquire takes the key, or one more level of it when it is ours.
func (l *Lock) TryAcquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	o, conn := &l.env.Options, l.env.Conns[0]
	start := l.env.Clock.Now() // every acquire resets the TTL: this lease's deadline is start + TTL
	depth, err := lockimpl.AcquireReentrant(ctx, conn, o, key, l.owner)
	if err != nil {
		return nil, err // ErrNotAcquired, or classified already
	}
	// NewLease's Release acts once: a lease released twice would
	// otherwise undo a level that another lease holds.
	return lockimpl.NewLease(lockimpl.LeaseFields{Key: key, Token: l.owner, Depth: depth, Deadline: start.Add(o.TTL),
		Release: func(ctx context.Context) error {
			_, err := lockimpl.ReleaseReentrant(ctx, conn, o, key, l.owner)
			return err
		}}), nil
}

// Close has nothing to free: the harness owns the connections.
func (l *Lock) Close() error { return nil }
