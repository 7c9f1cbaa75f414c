// Package seqlock is a lock written outside lockchaos with its building
// blocks: SET key token NX PX ttl with a readable token (client-<id>#<n>),
// released by the standard compare-and-delete script, waiting by pub/sub
// (lockimpl.WaitAcquire). Importing it registers it as "seq-lock".
package seqlock

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/lockchaos/lockchaos/lockimpl"
)

func init() {
	lockimpl.Register(lockimpl.Info{
		Name:        "seq-lock",
		Description: "example: SET NX PX with a readable token client-<id>#<n>; Lua compare-and-delete",
	}, New)
}

// New builds one client's seq-lock.
func New(env lockimpl.Env) (lockimpl.Locker, error) { return &Lock{env: env}, nil }

// Lock is one client's handle. Its tokens are unique within one program
// (client id and a counter), which is all the harness needs; a lock shared
// between programs wants lockimpl.NewToken.
type Lock struct {
	env lockimpl.Env
	n   atomic.Uint64
}

// Acquire waits for the key (pub/sub wake-ups, polling as fallback).
func (l *Lock) Acquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	return lockimpl.WaitAcquire(ctx, &l.env, key, func(ctx context.Context) (lockimpl.Lease, error) {
		return l.TryAcquire(ctx, key)
	})
}

// TryAcquire makes one SET NX PX attempt.
func (l *Lock) TryAcquire(ctx context.Context, key string) (lockimpl.Lease, error) {
	o := &l.env.Options // defaults filled in by the harness
	token := fmt.Sprintf("client-%d#%d", l.env.ClientID, l.n.Add(1))
	start := l.env.Clock.Now() // the injected clock, so clock-skew faults reach us
	cctx, cancel := context.WithTimeout(ctx, o.CommandTimeout)
	defer cancel()
	ok, err := l.env.Conns[0].SetNX(cctx, key, token, o.TTL).Result()
	if err != nil {
		return nil, lockimpl.Classify("seq-lock acquire", key, err)
	}
	if !ok {
		return nil, lockimpl.ErrNotAcquired
	}
	return lockimpl.NewLease(lockimpl.LeaseFields{Key: key, Token: token, Deadline: start.Add(o.TTL),
		Release: func(ctx context.Context) error {
			return lockimpl.CompareAndDelete(ctx, l.env.Conns[0], o, key, token)
		}}), nil
}

// Close has nothing to free: the harness owns the connections.
func (l *Lock) Close() error { return nil }
