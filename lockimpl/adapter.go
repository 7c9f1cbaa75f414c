package lockimpl

import (
	"context"
	"math/rand/v2"
	"time"
)

// Helpers shared by the third-party adapters (adapter_*.go). Libraries read
// the machine clock and take no Env.Clock, so client clock-skew faults do not
// reach their decisions; only the deadlines they report are translated.

// onClientClock maps a machine-clock instant to the client's clock: the same
// distance from now. The zero time stays zero (no promise).
func onClientClock(c Clock, t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return c.Now().Add(time.Until(t))
}

// retryDelay is RetryDelay plus up to RetryJitter.
func retryDelay(o *Options) time.Duration {
	d := o.RetryDelay
	if o.RetryJitter > 0 {
		d += rand.N(o.RetryJitter)
	}
	return d
}

// commandCtx bounds one release by CommandTimeout, as the built-in locks do.
func commandCtx(ctx context.Context, o *Options) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, o.CommandTimeout)
}
