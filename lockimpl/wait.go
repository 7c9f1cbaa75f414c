package lockimpl

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

// waitAcquire turns a single attempt into a blocking Acquire: it retries try
// until it succeeds, fails with something other than ErrNotAcquired, or
// Options.AcquireTimeout passes.
//
// Under Wait "pubsub" a blocked caller subscribes to the key's release
// channel (published by the release script) and retries as soon as a release
// is announced, or after RetryDelay at the latest (a release by expiry
// publishes nothing). The uncontended path costs one round trip: the
// subscription is made only after the first attempt fails, and one attempt is
// made after the subscription is confirmed so a release in between is not
// missed. Under "poll" it retries every RetryDelay + jitter.
//
// The timeout ends the wait, not an attempt in flight: cutting a SET NX
// short would make its outcome unknown (and could leave an unowned key).
func waitAcquire(ctx context.Context, env *Env, key string, try func(context.Context) (Lease, error)) (Lease, error) {
	o := &env.Options
	wctx, cancel := context.WithTimeout(ctx, o.AcquireTimeout)
	defer cancel()
	l, err := try(ctx)
	if !errors.Is(err, ErrNotAcquired) {
		return l, err
	}
	var msgs <-chan *redis.Message
	if o.Wait == "pubsub" {
		sub := env.Conns[0].Subscribe(wctx, releaseChannel(key))
		defer sub.Close()
		if _, serr := sub.Receive(wctx); serr == nil {
			msgs = sub.Channel(redis.WithChannelSize(4))
		}
	}
	for {
		l, err = try(ctx)
		if !errors.Is(err, ErrNotAcquired) {
			return l, err
		}
		d := o.RetryDelay
		if o.RetryJitter > 0 {
			d += rand.N(o.RetryJitter)
		}
		t := time.NewTimer(d)
		select {
		case <-wctx.Done():
			t.Stop()
			return nil, ErrNotAcquired
		case <-msgs:
		case <-t.C:
		}
		t.Stop()
	}
}
