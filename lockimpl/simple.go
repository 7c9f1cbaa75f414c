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
	// startClock reads the time the lease's TTL is counted from, before
	// the SET is sent; nil means the client's clock (Env.Clock).
	startClock func(ctx context.Context, s *simple) time.Time
	// fromReply counts the lease from the SET's reply instead.
	fromReply bool
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
	if s.startClock != nil {
		start = s.startClock(ctx, s)
	}
	cctx, cancel := s.cmds.commandTimeout(ctx, o.CommandTimeout)
	ok, err := s.conn.SetNX(cctx, key, token, o.TTL).Result()
	cancel()
	if err != nil {
		return nil, Classify("acquire", key, err)
	}
	if !ok {
		return nil, ErrNotAcquired
	}
	if s.fromReply {
		start = s.env.Clock.Now()
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
