package adapters

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockchaos/lockchaos/lockimpl"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
)

// redsyncLock adapts go-redsync/redsync v4: Redlock over every master in
// lockimpl.Env.Conns through its go-redis v9 pool, so client faults reach it. It
// times with the machine clock; see adapter.go.
type redsyncLock struct {
	env lockimpl.Env
	rs  *redsync.Redsync
}

const redsyncModule = "github.com/go-redsync/redsync/v4"

func init() {
	lockimpl.Register(lockimpl.Info{
		Name:        "redsync",
		Kind:        lockimpl.Adapter,
		Module:      redsyncModule,
		Description: "go-redsync/redsync v4 (Redlock) over every master, via its goredis/v9 pool; library defaults except expiry, tries, retry delay and drift",
		MinNodes:    1,
	}, func(env lockimpl.Env) (lockimpl.Locker, error) {
		pools := make([]redsyncredis.Pool, len(env.Conns))
		for i, c := range env.Conns {
			pools[i] = goredis.NewPool(c)
		}
		return &redsyncLock{env: env, rs: redsync.New(pools...)}, nil
	})
}

// tries lets the retry loop run for AcquireTimeout; the context ends it.
func (r *redsyncLock) tries() int {
	o := &r.env.Options
	return int(o.AcquireTimeout/max(o.RetryDelay, time.Millisecond)) + 1
}

func (r *redsyncLock) mutex(key string) *redsync.Mutex {
	o := &r.env.Options
	return r.rs.NewMutex(key,
		redsync.WithExpiry(o.TTL),
		redsync.WithTries(r.tries()),
		redsync.WithRetryDelayFunc(func(int) time.Duration { return o.RetryPause() }),
		redsync.WithDriftFactor(o.Drift),
	)
}

func (r *redsyncLock) Acquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, r.env.Options.AcquireTimeout)
	defer cancel()
	m := r.mutex(key)
	return r.lease(m, m.LockContext(ctx))
}

func (r *redsyncLock) TryAcquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	m := r.mutex(key)
	return r.lease(m, m.TryLockContext(ctx))
}

func (r *redsyncLock) lease(m *redsync.Mutex, err error) (lockimpl.Lease, error) {
	var taken *redsync.ErrTaken
	switch {
	case err == nil:
	case errors.Is(err, redsync.ErrFailed), errors.As(err, &taken):
		return nil, lockimpl.ErrNotAcquired
	case lockimpl.IsIndeterminate(err):
		// A node did not answer the last try; redsync's clean-up may not
		// have reached it either.
		return nil, lockimpl.Classify("redsync acquire", m.Name(), err)
	default:
		var nodeTaken *redsync.ErrNodeTaken
		if errors.As(err, &nodeTaken) {
			return nil, fmt.Errorf("redsync acquire %s: %w: %w", m.Name(), lockimpl.ErrNotAcquired, err)
		}
		return nil, fmt.Errorf("redsync acquire %s: %w", m.Name(), err)
	}
	return lockimpl.NewLease(lockimpl.LeaseFields{Key: m.Name(), Token: m.Value(), Deadline: onClientClock(r.env.Clock, m.Until()),
		Release: func(ctx context.Context) error { return r.release(ctx, m) }}), nil
}

// release maps redsync's "fewer than a quorum deleted" to lockimpl.ErrNotOwner unless
// a node's silence could have made the difference.
func (r *redsyncLock) release(ctx context.Context, m *redsync.Mutex) error {
	ctx, cancel := commandCtx(ctx, &r.env.Options)
	defer cancel()
	ok, err := m.UnlockContext(ctx)
	var taken *redsync.ErrTaken
	var nodeTaken *redsync.ErrNodeTaken
	switch {
	case ok:
		return nil
	case lockimpl.IsIndeterminate(err):
		return lockimpl.Classify("redsync release", m.Name(), err)
	case err == nil, errors.Is(err, redsync.ErrLockAlreadyExpired), errors.As(err, &taken), errors.As(err, &nodeTaken):
		return fmt.Errorf("redsync release %s: %w: %w", m.Name(), lockimpl.ErrNotOwner, err)
	}
	return fmt.Errorf("redsync release %s: %w", m.Name(), err)
}

// Config reports redsync's effective settings, its defaults included.
func (r *redsyncLock) Config() map[string]any {
	o := &r.env.Options
	return map[string]any{
		"library": redsyncModule, "version": lockimpl.ModuleVersion(redsyncModule), "pools": len(r.env.Conns), "quorum": len(r.env.Conns)/2 + 1,
		"expiry": o.TTL.String(), "tries": r.tries(), "retry_delay": fmt.Sprintf("%v + up to %v", o.RetryDelay, o.RetryJitter),
		"drift_factor": o.Drift, "timeout_factor": 0.05, "try_timeout": time.Duration(float64(o.TTL) * 0.05).String(),
		"fail_fast": false, "shuffle_pools": false, "set_nx_on_extend": false, "value": "16 random bytes, base64 (default)",
		"acquire_timeout": o.AcquireTimeout.String(), "release_timeout": o.CommandTimeout.String(), "clock": "machine",
	}
}

func (r *redsyncLock) Close() error { return nil }
