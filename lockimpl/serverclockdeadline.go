package lockimpl

import (
	"context"
	"time"
)

func init() {
	Register(Info{
		Name:        "server-clock-deadline",
		Kind:        Broken,
		Description: "simple, but the lease's TTL is counted from the server's TIME, read before the SET, and checked on the client's clock",
		Mistake: "it mixes two clocks: the deadline is the server's time plus the TTL, but the client " +
			"checks it against its own clock, so a client whose clock is behind the server's (or a server " +
			"clock that jumped ahead) believes its lease lasts that much past the key's expiry; on one " +
			"machine with honest clocks the two agree, and nothing shows",
	}, func(env Env) (Locker, error) {
		return &simple{nodeBase: newNodeBase(env), startClock: serverTime}, nil
	})
}

// serverTime is the server's clock (TIME); the client's when TIME fails.
func serverTime(ctx context.Context, s *simple) time.Time {
	cctx, cancel := s.cmdCtx(ctx)
	defer cancel()
	t, err := s.conn.Time(cctx).Result()
	if err != nil {
		return s.env.Clock.Now()
	}
	return t
}
