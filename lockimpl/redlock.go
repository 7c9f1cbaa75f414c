package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// redlock is antirez's Redlock over the independent masters in Env.Conns:
// SET NX PX on every node in parallel, a quorum of N/2+1, and a validity
// check after the replies (the Redis docs' step 3). A failed attempt is
// undone on every node that may have set the key, including those that did
// not answer.
type redlock struct {
	env    Env
	quorum int
	// skipValidity accepts a quorum however long it took (the K5 control).
	skipValidity bool
	fan          *fanout
}

func init() {
	Register(Info{
		Name:        "redlock",
		Kind:        Correct,
		Description: "Redlock: SET NX PX on N independent masters in parallel, quorum N/2+1, validity = TTL − elapsed − drift; undone everywhere on failure",
		MinNodes:    1,
	}, newRedlock(false))
	Register(Info{
		Name:        "redlock-no-validity",
		Kind:        Broken,
		Description: "redlock without the elapsed-time check after the replies",
		Mistake:     "accepts a quorum however long acquiring took: a client paused between the replies and its check believes it holds a lock whose keys already expired, for a whole TTL from the end of its acquire",
		MinNodes:    1,
	}, newRedlock(true))
	Register(Info{
		Name:        "redlock-minority-quorum",
		Kind:        Broken,
		Description: "redlock whose quorum is N/2 (2 of 5), not N/2+1",
		Mistake: "a quorum that is not a majority: two clients racing for the key each win the nodes their SETs " +
			"reached first (2 and 3 of 5, or 2 and 2) and both believe they hold the lock, with no fault at all",
		MinNodes: 1,
	}, newRedlockMinority)
}

func newRedlock(skipValidity bool) Factory {
	return func(env Env) (Locker, error) {
		return &redlock{env: env, quorum: len(env.Conns)/2 + 1, skipValidity: skipValidity || env.Options.SkipValidityCheck,
			fan: newFanout(env.Conns)}, nil
	}
}

// newRedlockMinority is redlock with the quorum computed as N/2 (at least
// one): a minority of an odd N.
func newRedlockMinority(env Env) (Locker, error) {
	l, err := newRedlock(false)(env)
	if err == nil {
		l.(*redlock).quorum = max(len(env.Conns)/2, 1)
	}
	return l, err
}

// Acquire polls: a release on one node says nothing about the others, so
// there is no single channel worth subscribing to.
func (r *redlock) Acquire(ctx context.Context, key string) (Lease, error) {
	o := &r.env.Options
	ctx, cancel := context.WithTimeout(ctx, o.AcquireTimeout)
	defer cancel()
	for {
		l, err := r.TryAcquire(ctx, key)
		if !errors.Is(err, ErrNotAcquired) {
			return l, err
		}
		if r.env.Clock.Sleep(ctx, o.RetryPause()) != nil {
			return nil, ErrNotAcquired
		}
	}
}

// TryAcquire makes one attempt. It waits for every node's reply (or its
// CommandTimeout) before reading the clock again, so a slow reply from any
// node — or a client paused after the replies — shortens the validity.
func (r *redlock) TryAcquire(ctx context.Context, key string) (Lease, error) {
	o := &r.env.Options
	token := NewToken()
	start := r.env.Clock.Now()
	set := r.fan.run(ctx, r.fan.every, o.CommandTimeout, func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		return c.SetNX(ctx, key, token, o.TTL).Result()
	})
	end := r.env.Clock.Now()

	acquired := 0
	for _, s := range set {
		if s.ok {
			acquired++
		}
	}
	validity := o.TTL - end.Sub(start) - r.driftAllowance()
	if acquired >= r.quorum && (r.skipValidity || validity > 0) {
		// Every key was set after start, so each lives until start+TTL on its
		// node's clock, less the drift allowance: that is end+validity.
		deadline := end.Add(validity)
		if r.skipValidity {
			// The broken variant never measured how long acquiring took, so
			// it believes it has the whole TTL from now on.
			deadline = end.Add(o.TTL - r.driftAllowance())
		}
		return &basicLease{key: key, token: token, deadline: deadline,
			release: func(ctx context.Context) error { return r.release(ctx, key, token) }}, nil
	}

	// Undo wherever the key may have been set, including nodes that timed
	// out. The caller's ctx may be what ended the attempt: do not inherit its end.
	var errs []error
	var undoOn []int
	for i, s := range set {
		if s.err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", i+1, s.err))
		}
		if s.ok || maybeApplied(s.err) {
			undoOn = append(undoOn, i)
		}
	}
	mayHold := 0
	if len(undoOn) > 0 {
		undo := r.fan.run(context.WithoutCancel(ctx), undoOn, o.CommandTimeout, func(ctx context.Context, c redis.UniversalClient) (bool, error) {
			return deleteIfOwner(ctx, c, key, token)
		})
		for _, u := range undo {
			if maybeApplied(u.err) {
				mayHold++
			}
		}
	}
	if mayHold >= r.quorum {
		return nil, fmt.Errorf("redlock acquire %s: %w: %d of %d nodes may still hold our key: %w",
			key, ErrIndeterminate, mayHold, len(set), errors.Join(errs...))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("redlock acquire %s: %w (%d of %d nodes, quorum %d): %w",
			key, ErrNotAcquired, acquired, len(set), r.quorum, errors.Join(errs...))
	}
	return nil, ErrNotAcquired
}

// driftAllowance is the Redis docs' TTL×drift plus 2ms for the servers'
// expiry granularity.
func (r *redlock) driftAllowance() time.Duration {
	return time.Duration(float64(r.env.Options.TTL)*r.env.Options.Drift) + 2*time.Millisecond
}

// release deletes the key on every node that still holds our token. It
// succeeds if any node did; ErrNotOwner when every node answered and none had
// it.
func (r *redlock) release(ctx context.Context, key, token string) error {
	res := r.fan.run(ctx, r.fan.every, r.env.Options.CommandTimeout, func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		return deleteIfOwner(ctx, c, key, token)
	})
	var errs []error
	for i, s := range res {
		if s.ok {
			return nil
		}
		if s.err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", i+1, s.err))
		}
	}
	if len(errs) > 0 {
		return Classify("redlock release", key, errors.Join(errs...))
	}
	return ErrNotOwner
}

// deleteIfOwner runs lua/release.lua on one node.
func deleteIfOwner(ctx context.Context, c redis.UniversalClient, key, token string) (bool, error) {
	n, err := releaseScript.Run(ctx, c, []string{key, ReleaseChannel(key)}, token).Int()
	return n == 1, err
}

// maybeApplied reports whether a command that failed with err may still have
// run on the server. A failed dial means it was never sent.
func maybeApplied(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	return IsIndeterminate(err)
}

// Config reports the effective settings (results.json lock_config).
func (r *redlock) Config() map[string]any {
	o := &r.env.Options
	return map[string]any{
		"nodes": len(r.env.Conns), "quorum": r.quorum, "ttl": o.TTL.String(), "drift": o.Drift,
		"drift_allowance": r.driftAllowance().String(), "validity_check": !r.skipValidity,
		"command_timeout": o.CommandTimeout.String(), "acquire_timeout": o.AcquireTimeout.String(),
		"retry_delay": o.RetryDelay.String(), "retry_jitter": o.RetryJitter.String(), "wait": "poll",
	}
}

// Close stops the fan-out goroutines.
func (r *redlock) Close() error {
	r.fan.close()
	return nil
}
