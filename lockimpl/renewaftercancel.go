package lockimpl

import (
	"context"
	"fmt"
)

// renewAfterCancel is the watchdog of renew-no-owner-check's shape, with an
// owner-checked renewal (correct), and one mistake in its acquire: once
// SET NX has taken the key and the renewal has started, it looks whether
// its caller is still there and, when the caller's context is done (the
// request was cancelled or timed out), returns the caller's error, without
// stopping the renewal it started or deleting the key it took. Nobody
// holds the key, and the renewal keeps it alive until the process exits.
// Redisson shipped it: an interrupted tryLock left its watchdog renewing
// the lock forever (redisson/redisson#2714, fixed by #3826; #4368 and the
// open #7272 are the same leak by other paths). A control: the cancel
// fault's cancelled-acquire must catch it, and nothing else need.
type renewAfterCancel struct {
	*renewingSimple
}

func init() {
	Register(Info{
		Name:        "renew-after-cancel",
		Kind:        Broken,
		Renews:      true,
		Description: "simple + an owner-checked renewal every renew_interval; an acquire whose caller's context is done after SET took the key returns the caller's error",
		Mistake: "an acquire cancelled after its SET took the key gives up without stopping the renewal it started or " +
			"deleting the key: nobody holds the lock, and the renewal keeps it from everyone (Redisson #2714)",
	}, func(env Env) (Locker, error) {
		rs, err := newRenewingSimple(env)
		return &renewAfterCancel{rs}, err
	})
}

// Acquire looks at its caller's own context, not at the attempt's (which
// the acquire timeout bounds too): only the caller's cancellation makes
// it give up the key it took.
func (r *renewAfterCancel) Acquire(ctx context.Context, key string) (Lease, error) {
	return r.wait(ctx, key, func(actx context.Context, key string) (Lease, error) { return r.try(actx, ctx, key) })
}

func (r *renewAfterCancel) TryAcquire(ctx context.Context, key string) (Lease, error) {
	return r.try(ctx, ctx, key)
}

func (r *renewAfterCancel) try(ctx, caller context.Context, key string) (Lease, error) {
	l, err := r.simple.TryAcquire(ctx, key)
	if err != nil {
		return nil, err
	}
	bl := l.(*basicLease)
	rn := r.renewals.Start(key, bl.token, bl.deadline.Add(-r.env.Options.TTL), func(ctx context.Context) error {
		return RenewOwned(ctx, r.conn, &r.env.Options, key, bl.token)
	})
	if err := caller.Err(); err != nil {
		// The mistake: the caller is gone, so the lock is "not acquired";
		// rn runs on.
		return nil, fmt.Errorf("acquire %s: %w", key, err)
	}
	return r.track(bl, rn), nil
}
