// Package renewlock is a renewing lock written outside lockchaos with its
// building blocks: SET key token NX PX ttl, then an owner-checked renewal
// (lockimpl.RenewOwned) every renew_interval in the background, run by
// lockimpl.Renewals: each acknowledged renewal moves the lease's deadline,
// each attempt is reported through Env.Note, and Lost closes when a renewal
// is refused or none was acknowledged before the deadline. Released by the
// standard compare-and-delete script. Importing it registers "renew-lock".
package renewlock

import (
	"context"

	"github.com/lockchaos/lockchaos/lockimpl"
)

func init() {
	lockimpl.Register(lockimpl.Info{
		Name:        "renew-lock",
		Description: "example: SET NX PX + owner-checked renewal every renew_interval (lockimpl.Renewals); Lua compare-and-delete",
		Renews:      true, // the suite then runs the renewal scenarios, against the watchdog's bar
	}, New)
}

// New builds one client's renew-lock.
func New(env lockimpl.Env) (lockimpl.Locker, error) {
	l := &Lock{env: env}
	var err error
	// 0: every Options.RenewInterval (an interval too close to the TTL to
	// renew in time is an error that names it).
	l.renewals, err = lockimpl.NewRenewals(&l.env, 0)
	return l, err
}

// Lock is one client's handle: the environment and the renewals of the
// leases it holds.
type Lock struct {
	env      lockimpl.Env
	renewals *lockimpl.Renewals
}

// Acquire waits for the key (pub/sub wake-ups, polling as fallback).
func (l *Lock) Acquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	return lockimpl.WaitAcquire(ctx, &l.env, key, func(ctx context.Context) (lockimpl.Lease, error) {
		return l.TryAcquire(ctx, key)
	})
}

// TryAcquire makes one SET NX PX attempt and, when it took the key, starts
// renewing it.
func (l *Lock) TryAcquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	o, conn, token := &l.env.Options, l.env.Conns[0], lockimpl.NewToken()
	start := l.env.Clock.Now() // the first deadline is start + TTL
	cctx, cancel := context.WithTimeout(ctx, o.CommandTimeout)
	defer cancel()
	ok, err := conn.SetNX(cctx, key, token, o.TTL).Result()
	if err != nil {
		return nil, lockimpl.Classify("acquire", key, err)
	}
	if !ok {
		return nil, lockimpl.ErrNotAcquired
	}
	r := l.renewals.Start(key, token, start, func(ctx context.Context) error {
		return lockimpl.RenewOwned(ctx, conn, o, key, token)
	})
	// The lease's deadline and Lost follow r; its Release stops r.
	return l.renewals.Lease(r, lockimpl.LeaseFields{Key: key, Token: token,
		Release: func(ctx context.Context) error { return lockimpl.CompareAndDelete(ctx, conn, o, key, token) }}), nil
}

// Close stops the renewals of the leases still held and waits for them.
func (l *Lock) Close() error {
	l.renewals.Close()
	return nil
}
