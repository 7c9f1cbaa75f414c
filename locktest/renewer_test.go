package locktest

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// newRenewer is a renewing lock as a lock author writes one outside the
// project: the built-in simple lock, plus an owner-checked extension of the
// key every renew interval, each reported through Env.Note, stopped (and
// waited for) when a release starts. Its lease's deadline is the last
// acknowledged renewal's send time + TTL (the acquire's first); a renewal
// answered after that deadline is not reported (the lease it was for is
// gone, as the watchdog's Renewal does). Its holds in stall-unlock (60ms) are
// shorter than a renew interval, so it reports no renewal there while its
// release is frozen past its TTL: the case the silent-renewal rule misjudged.
func newRenewer(env lockimpl.Env) (lockimpl.Locker, error) {
	in, err := lockimpl.New("simple", env)
	if err != nil {
		return nil, err
	}
	o := env.Options.WithDefaults()
	return &renewer{Locker: in, env: env, o: o, every: o.RenewInterval}, nil
}

// newLateRenewer is newRenewer renewing at 0.8×TTL whatever the renew
// interval, as redis-semaphore does: late, but safe.
func newLateRenewer(env lockimpl.Env) (lockimpl.Locker, error) {
	l, err := newRenewer(env)
	if r, ok := l.(*renewer); ok {
		r.every = r.o.TTL * 8 / 10
	}
	return l, err
}

// NewRenewerForTest is newRenewer for the package's external tests.
var NewRenewerForTest = newRenewer

type renewer struct {
	lockimpl.Locker
	env   lockimpl.Env
	o     lockimpl.Options
	every time.Duration // between renewals
}

func (r *renewer) Acquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	l, err := r.Locker.Acquire(ctx, key)
	return r.renew(l, err)
}

func (r *renewer) TryAcquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	l, err := r.Locker.TryAcquire(ctx, key)
	return r.renew(l, err)
}

func (r *renewer) renew(l lockimpl.Lease, err error) (lockimpl.Lease, error) {
	if err != nil || l == nil {
		return l, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	rl := &renewedLease{Lease: l, cancel: cancel, done: make(chan struct{})}
	first := l.Deadline()
	if first.IsZero() {
		first = r.env.Clock.Now().Add(r.o.TTL)
	}
	rl.deadline.Store(first.UnixNano())
	go func() {
		defer close(rl.done)
		for {
			if r.env.Clock.Sleep(ctx, r.every) != nil {
				return
			}
			start := r.env.Clock.Now()
			if !start.Before(rl.Deadline()) {
				return // the lease is gone: nothing left to renew
			}
			err := lockimpl.RenewOwned(ctx, r.env.Conns[0], &r.o, l.Key(), l.Token())
			if ctx.Err() != nil {
				return // the release began: no more renewals, none reported
			}
			if err == nil {
				rl.deadline.Store(start.Add(r.o.TTL).UnixNano())
			} else if !r.env.Clock.Now().Before(rl.Deadline()) {
				return // answered after the lease's deadline: it was for a lease already gone
			}
			if r.env.Note != nil {
				r.env.Note(lockimpl.Note{Kind: lockimpl.NoteRenew, Key: l.Key(), Token: l.Token(), Start: start, End: r.env.Clock.Now(), Err: err})
			}
			if err != nil {
				return
			}
		}
	}()
	return rl, nil
}

type renewedLease struct {
	lockimpl.Lease
	cancel   context.CancelFunc
	done     chan struct{}
	once     sync.Once
	deadline atomic.Int64 // unix ns by Env.Clock
}

// Deadline moves with each acknowledged renewal.
func (l *renewedLease) Deadline() time.Time { return time.Unix(0, l.deadline.Load()) }

// Release stops the renewals first (waiting for one in flight), then
// releases.
func (l *renewedLease) Release(ctx context.Context) error {
	l.once.Do(func() { l.cancel(); <-l.done })
	return l.Lease.Release(ctx)
}
