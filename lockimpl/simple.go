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
	// unknownIsHeld takes a SET whose outcome is unknown (a timeout, a
	// broken connection) as acquired (unknown-acquire-held's mistake).
	unknownIsHeld bool
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
	// The lease is made before the SET, with the token's bytes in the
	// same allocation (tokenLease), and the token is sent as a *string
	// into it: boxing a string as a command argument costs an allocation,
	// a pointer none (go-redis writes *string as the string). The SET and
	// the release send the same argument.
	tl := &tokenLease{basicLease: basicLease{key: key}}
	l := &tl.basicLease
	l.token = tokenIn(&tl.buf)
	tok := any(&l.token)
	start := s.env.Clock.Now()
	if s.startClock != nil {
		start = s.startClock(ctx, s)
	}
	cctx, cancel := s.cmds.commandTimeout(ctx, o.CommandTimeout)
	ok, err := s.conn.SetNX(cctx, key, tok, o.TTL).Result()
	cancel()
	if err != nil {
		if s.unknownIsHeld && IsIndeterminate(err) && ctx.Err() == nil {
			return s.fill(l, tok, start), nil
		}
		return nil, Classify("acquire", key, err)
	}
	if !ok {
		return nil, ErrNotAcquired
	}
	if s.fromReply {
		start = s.env.Clock.Now()
	}
	return s.fill(l, tok, start), nil
}

// tokenLease is a basicLease with room for its token (tokenIn): one
// allocation for both.
type tokenLease struct {
	basicLease
	buf [tokenLen]byte
}

// lease is the lease of a key set with token at start (by the client's
// clock, before the command was sent).
func (s *simple) lease(key, token string, start time.Time) *basicLease {
	l := &basicLease{key: key, token: token}
	return s.fill(l, &l.token, start)
}

// fill completes l, whose key and token are set, for a SET made at start;
// tok is the token as a command argument (&l.token). The standard
// release needs no closure of its own: every allocation of a cycle costs
// the bench (issue 27).
func (s *simple) fill(l *basicLease, tok any, start time.Time) *basicLease {
	l.deadline = start.Add(s.env.Options.TTL)
	if unlock := s.unlock; unlock != nil {
		key, token := l.key, l.token
		l.release = func(ctx context.Context) error { return unlock(ctx, &s.nodeBase, key, token) }
		return l
	}
	l.base, l.unlock, l.tokenArg = &s.nodeBase, releaseOwned, tok
	return l
}

// releaseOwned is the standard release (CompareAndDelete) of l, whose key
// b set.
func releaseOwned(ctx context.Context, b *nodeBase, l *basicLease) error {
	return compareAndDelete(ctx, b.conn, &b.env.Options, b.releaseKeys(l.key), l.tokenArg)
}
