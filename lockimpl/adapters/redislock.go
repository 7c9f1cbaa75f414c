package adapters

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockchaos/lockchaos/lockimpl"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// redislockLock adapts bsm/redislock: one node (lockimpl.Env.Conns[0]), SET NX PX by
// Lua, a blocking Obtain that retries on a RetryStrategy. Its commands run
// under the caller's context only: the library has no per-command timeout.
type redislockLock struct {
	env lockimpl.Env
}

const redislockModule = "github.com/bsm/redislock"

func init() {
	lockimpl.Register(lockimpl.Info{
		Name:        "redislock",
		Kind:        lockimpl.Adapter,
		Module:      redislockModule,
		Description: "bsm/redislock on the first node: Obtain with LinearBackoff(retry_delay) bounded by acquire_timeout; Release maps ErrLockNotHeld to ErrNotOwner",
	}, func(env lockimpl.Env) (lockimpl.Locker, error) { return &redislockLock{env: env}, nil })
}

func (r *redislockLock) Acquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, r.env.Options.AcquireTimeout)
	defer cancel()
	return r.obtain(ctx, key, &redislock.Options{RetryStrategy: redislock.LinearBackoff(r.env.Options.RetryDelay)})
}

func (r *redislockLock) TryAcquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	ctx, cancel := commandCtx(ctx, &r.env.Options)
	defer cancel()
	return r.obtain(ctx, key, nil) // nil: the library's NoRetry
}

// obtain runs Obtain through a Scripter that notes when each attempt was
// sent, so the lease's Deadline is the successful attempt's start + TTL
// without an extra PTTL round trip.
func (r *redislockLock) obtain(ctx context.Context, key string, opt *redislock.Options) (lockimpl.Lease, error) {
	sc := &stampScripter{Scripter: r.env.Conns[0], clock: r.env.Clock}
	lock, err := redislock.New(sc).Obtain(ctx, key, r.env.Options.TTL, opt)
	switch {
	case errors.Is(err, redislock.ErrNotObtained):
		// Also when the wait timed out: Obtain joins ErrNotObtained with ctx.Err().
		return nil, lockimpl.ErrNotAcquired
	case err != nil:
		return nil, lockimpl.Classify("redislock obtain", key, err)
	}
	return lockimpl.NewLease(lockimpl.LeaseFields{Key: key, Token: lock.Token(), Deadline: sc.sent.Add(r.env.Options.TTL),
		Release: func(ctx context.Context) error { return r.release(ctx, lock) }}), nil
}

func (r *redislockLock) release(ctx context.Context, lock *redislock.Lock) error {
	ctx, cancel := commandCtx(ctx, &r.env.Options)
	defer cancel()
	switch err := lock.Release(ctx); {
	case err == nil:
		return nil
	case errors.Is(err, redislock.ErrLockNotHeld):
		return fmt.Errorf("redislock release %s: %w: %w", lock.Key(), lockimpl.ErrNotOwner, err)
	default:
		return lockimpl.Classify("redislock release", lock.Key(), err)
	}
}

// stampScripter records the client-clock time of the last script sent.
type stampScripter struct {
	redis.Scripter
	clock lockimpl.Clock
	sent  time.Time
}

func (s *stampScripter) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	s.sent = s.clock.Now()
	return s.Scripter.EvalSha(ctx, sha1, keys, args...)
}

func (s *stampScripter) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	s.sent = s.clock.Now()
	return s.Scripter.Eval(ctx, script, keys, args...)
}

// Config reports redislock's effective settings.
func (r *redislockLock) Config() map[string]any {
	o := &r.env.Options
	return map[string]any{
		"library": redislockModule, "version": lockimpl.ModuleVersion(redislockModule), "ttl": o.TTL.String(),
		"retry_strategy": fmt.Sprintf("LinearBackoff(%v)", o.RetryDelay), "acquire_timeout": o.AcquireTimeout.String(),
		"try_timeout": o.CommandTimeout.String(), "release_timeout": o.CommandTimeout.String(),
		"token": "16 random bytes, base64url (default)", "metadata": "",
	}
}

func (r *redislockLock) Close() error { return nil }
