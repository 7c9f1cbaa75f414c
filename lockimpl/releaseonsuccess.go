package lockimpl

import "context"

// releaseOnSuccess is the watchdog of renew-no-owner-check's shape, with
// an owner-checked renewal (correct), used through a scoped helper with one
// mistake: the helper returns the critical section's error before it
// releases (`if err := fn(ctx); err != nil { return err }`, the defer
// forgotten), so a critical section that fails leaves the lock held, and
// the renewal keeps it alive until the process exits. The harness calls
// Release on the exception path (the throw fault's release carries
// lockimpl.ThrowReport); this lease then does what the helper did: nothing.
// A control: the throw fault's thrown-in-critical-section must catch it,
// and nothing else can.
type releaseOnSuccess struct {
	*renewingSimple
}

func init() {
	Register(Info{
		Name:        "release-on-success",
		Kind:        Broken,
		Renews:      true,
		Description: "simple + an owner-checked renewal every renew_interval, through a scoped helper that releases only when the critical section succeeded",
		Mistake: "a critical section that raises skips the release (the helper returns its error first) and the renewal goes " +
			"on: nobody holds the lock, and the renewal keeps it from everyone",
	}, func(env Env) (Locker, error) {
		rs, err := newRenewingSimple(env)
		return &releaseOnSuccess{rs}, err
	})
}

func (r *releaseOnSuccess) Acquire(ctx context.Context, key string) (Lease, error) {
	return r.wait(ctx, key, r.TryAcquire)
}

func (r *releaseOnSuccess) TryAcquire(ctx context.Context, key string) (Lease, error) {
	l, err := r.simple.TryAcquire(ctx, key)
	if err != nil {
		return nil, err
	}
	bl := l.(*basicLease)
	rn := r.renewals.Start(key, bl.token, bl.deadline.Add(-r.env.Options.TTL), func(ctx context.Context) error {
		return RenewOwned(ctx, r.conn, &r.env.Options, key, bl.token)
	})
	return &successOnlyLease{r.track(bl, rn)}, nil
}

// successOnlyLease is released only off the exception path.
type successOnlyLease struct{ Lease }

func (l *successOnlyLease) Release(ctx context.Context) error {
	if ThrowFrom(ctx) != nil {
		return nil // the mistake: the helper returned the error, the release never ran
	}
	return l.Lease.Release(ctx)
}
