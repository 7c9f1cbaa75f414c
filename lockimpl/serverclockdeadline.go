package lockimpl

import (
	"context"
	"time"
)

func init() {
	Register(Info{
		Name:        "server-clock-deadline",
		Kind:        Broken,
		Description: "simple, but the lease's TTL is counted from the server's TIME read after the SET, and compared with the client's clock",
		Mistake: "it mixes two clocks: the deadline is the server's time plus the TTL, but the client " +
			"checks it against its own clock, so a client whose clock is behind the server's believes " +
			"its lease lasts that much past the key's expiry (on one machine the two agree, and nothing shows)",
	}, func(env Env) (Locker, error) {
		return &simple{nodeBase: newNodeBase(env), leaseStart: fromServerTime}, nil
	})
}

// fromServerTime counts the lease from the server's clock (TIME, right
// after the SET); when TIME fails, from when the SET was sent.
func fromServerTime(ctx context.Context, s *simple, sent time.Time) time.Time {
	cctx, cancel := s.cmdCtx(ctx)
	defer cancel()
	t, err := s.conn.Time(cctx).Result()
	if err != nil {
		return sent
	}
	return t
}
