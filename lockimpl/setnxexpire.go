package lockimpl

import "context"

// setnxExpire sets the key, then its TTL, as two commands: the classic
// pre-2.6.12 mistake (SET key value NX PX is one).
type setnxExpire struct{ simple }

func init() {
	Register(Info{
		Name:        "setnx-expire",
		Kind:        Broken,
		Description: "SETNX key token, then PEXPIRE key ttl as a second command",
		Mistake: "not atomic: a client that dies (or loses its connection) between SETNX and PEXPIRE " +
			"leaves a key without TTL, which no one can ever acquire again",
	}, func(env Env) (Locker, error) { return &setnxExpire{simple{nodeBase: newNodeBase(env)}}, nil })
}

func (s *setnxExpire) Acquire(ctx context.Context, key string) (Lease, error) {
	return s.wait(ctx, key, s.TryAcquire)
}

func (s *setnxExpire) TryAcquire(ctx context.Context, key string) (Lease, error) {
	token := NewToken()
	start := s.env.Clock.Now()
	cctx, cancel := s.cmdCtx(ctx)
	ok, err := s.conn.SetNX(cctx, key, token, 0).Result() // expiration 0: a bare SETNX
	cancel()
	if err != nil {
		return nil, Classify("acquire", key, err)
	}
	if !ok {
		return nil, ErrNotAcquired
	}
	// The mistake: if this never arrives, the key above lives forever.
	cctx, cancel = s.cmdCtx(ctx)
	err = s.conn.PExpire(cctx, key, s.env.Options.TTL).Err()
	cancel()
	if err != nil {
		return nil, Classify("acquire (expire)", key, err)
	}
	return s.lease(key, token, start), nil
}
