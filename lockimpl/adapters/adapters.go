// Package adapters registers lockchaos's third-party lock libraries behind
// the lockimpl API (redsync, redislock, rueidislock). It is a package of its
// own so that lockimpl, the API a user's lock imports, pulls in none of those
// libraries; package scenarios imports it for its init (the catalog names
// the adapters), and so does everything that loads scenarios.
package adapters

import (
	"context"
	"github.com/lockchaos/lockchaos/lockimpl"
	"time"
)

// Helpers shared by the third-party adapters (redsync.go, redislock.go,
// rueidislock.go). Libraries read the machine clock and take no
// lockimpl.Env.Clock, so client clock-skew faults do not reach their
// decisions; only the deadlines they report are translated.

// onClientClock maps a machine-clock instant to the client's clock: the same
// distance from now. The zero time stays zero (no promise).
func onClientClock(c lockimpl.Clock, t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return c.Now().Add(time.Until(t))
}

// commandCtx bounds one release by CommandTimeout, as the built-in locks do.
func commandCtx(ctx context.Context, o *lockimpl.Options) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, o.CommandTimeout)
}
