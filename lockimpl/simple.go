package lockimpl

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// simple is SET key token NX PX ttl; release by a Lua compare-and-delete.
type simple struct {
	env  Env
	conn redis.UniversalClient
}

var releaseScript = script("release")

func init() {
	Register(Info{
		Name:        "simple",
		Kind:        Correct,
		Description: "SET key token NX PX ttl; release by Lua compare-and-delete",
	}, func(env Env) (Locker, error) { return &simple{env: env, conn: env.Conns[0]}, nil })
}

func (s *simple) Acquire(ctx context.Context, key string) (Lease, error) {
	return waitAcquire(ctx, &s.env, key, func(ctx context.Context) (Lease, error) { return s.TryAcquire(ctx, key) })
}

func (s *simple) TryAcquire(ctx context.Context, key string) (Lease, error) {
	o := &s.env.Options
	token := NewToken()
	start := s.env.Clock.Now()
	cctx, cancel := context.WithTimeout(ctx, o.CommandTimeout)
	ok, err := s.conn.SetNX(cctx, key, token, o.TTL).Result()
	cancel()
	if err != nil {
		return nil, classify("acquire", key, err)
	}
	if !ok {
		return nil, ErrNotAcquired
	}
	return &basicLease{
		key: key, token: token, deadline: start.Add(o.TTL),
		release: func(ctx context.Context) error { return compareAndDelete(ctx, s.conn, &s.env.Options, key, token) },
	}, nil
}

// compareAndDelete runs the release script: delete key only if it holds token.
func compareAndDelete(ctx context.Context, conn redis.Scripter, o *Options, key, token string) error {
	cctx, cancel := context.WithTimeout(ctx, o.CommandTimeout)
	defer cancel()
	n, err := releaseScript.Run(cctx, conn, []string{key, releaseChannel(key)}, token).Int()
	if err != nil {
		return classify("release", key, err)
	}
	if n == 0 {
		return ErrNotOwner
	}
	return nil
}

func (s *simple) Close() error { return nil }
