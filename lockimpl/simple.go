package lockimpl

import (
	"context"
	"time"
)

// simple is SET key token NX PX ttl; release by a Lua compare-and-delete.
// Broken controls reuse it with another unlock.
type simple struct {
	nodeBase
	// unlock frees key held with token; nil means compare-and-delete.
	unlock func(ctx context.Context, b *nodeBase, key, token string) error
	// leaseStart is when the lease's TTL is counted from, given when the
	// SET was sent (by the client's clock); nil means then.
	leaseStart func(ctx context.Context, s *simple, sent time.Time) time.Time
}

func init() {
	Register(Info{
		Name:        "simple",
		Kind:        Correct,
		Description: "SET key token NX PX ttl; release by Lua compare-and-delete",
	}, func(env Env) (Locker, error) { return &simple{nodeBase: newNodeBase(env)}, nil })
}

func (s *simple) Acquire(ctx context.Context, key string) (Lease, error) {
	return s.wait(ctx, key, s.TryAcquire)
}

func (s *simple) TryAcquire(ctx context.Context, key string) (Lease, error) {
	o := &s.env.Options
	token := NewToken()
	start := s.env.Clock.Now()
	cctx, cancel := context.WithTimeout(ctx, o.CommandTimeout)
	ok, err := s.conn.SetNX(cctx, key, token, o.TTL).Result()
	cancel()
	if err != nil {
		return nil, Classify("acquire", key, err)
	}
	if !ok {
		return nil, ErrNotAcquired
	}
	if s.leaseStart != nil {
		start = s.leaseStart(ctx, s, start)
	}
	return s.lease(key, token, start), nil
}

// lease is the lease of a key set with token at start (by the client's
// clock, before the command was sent).
func (s *simple) lease(key, token string, start time.Time) *basicLease {
	unlock := s.unlock
	if unlock == nil {
		unlock = func(ctx context.Context, b *nodeBase, key, token string) error {
			return CompareAndDelete(ctx, b.conn, &b.env.Options, key, token)
		}
	}
	return &basicLease{
		key: key, token: token, deadline: start.Add(s.env.Options.TTL),
		release: func(ctx context.Context) error { return unlock(ctx, &s.nodeBase, key, token) },
	}
}
