package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

func init() {
	Register(Kind{
		Name:    history.FaultCancel,
		Instant: true,
		Description: "the application cancels its request at a point of one client's cycle (a timeout, a client gone): " +
			"in-acquire, after the reply that took the lock, the acquire's context; in the critical section " +
			"(after-acquire, before-write, in-write, before-release) the context the application's deferred release " +
			"gets; in-release, after the release's first reply, the release's. The application goes on as Go code " +
			"does: an acquire that returned an error is not released. A lock in a driver process is cancelled through the " +
			"protocol's cancel extension (asyncio task.cancel(), Thread.interrupt(), a Node caller that stops waiting): at " +
			"in-acquire and in-release while its call is in flight, params.delay (default 0) after the call's request",
		Validate: func(s Spec) error {
			if err := validPointTarget(s.Target); err != nil {
				return err
			}
			if !slices.Contains(CancelPoints, s.Point) {
				return fmt.Errorf("point: %q is not one of %s (a point inside an acquire, the critical section or a release)", s.Point, strings.Join(CancelPoints, ", "))
			}
			_, err := cancelDelay(s)
			return err
		},
		New: func(s Scheduled) (Injector, error) { return &cancelCall{s: s}, nil },
	})
}

// CancelPoints are the points at which a request can be cancelled: inside
// a lock call, or in the critical section between them.
var CancelPoints = []string{history.PointInAcquire, history.PointAfterAcquire, history.PointBeforeWrite,
	history.PointInWrite, history.PointBeforeRelease, history.PointInRelease}

type cancelCall struct{ s Scheduled }

// Start arms the cancel and waits (bounded by four TTLs and a second) for a
// client to reach the point in a cycle it can cancel.
func (p *cancelCall) Start(ctx context.Context, env *Env) (Outcome, error) {
	d, _ := cancelDelay(p.s.Spec) // validated
	arm := func(ctx context.Context, cs []int, point string) <-chan Hit {
		return env.Clients.Cancel(ctx, cs, point, d)
	}
	out, h := atPoint(ctx, env, p.s.Spec, 4*env.TTL+time.Second, arm)
	if out.Applied {
		out.Effect[history.EffectCancelledAt] = ms(h.From)
		for k, v := range h.Effect {
			out.Effect[k] = v
		}
		if _, failed := h.Effect[history.EffectReason]; failed {
			out.Applied = false // the lock's call could not be cancelled (a driver's)
		}
	}
	return out, nil
}

// cancelDelay is params.delay: how long after a driver's call is sent
// an in-acquire or in-release cancel is (0 when unset).
func cancelDelay(s Spec) (time.Duration, error) {
	v := s.Params[history.ParamDelay]
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > time.Minute {
		return 0, fmt.Errorf("params.delay: %q is not a duration from 0 to 1m", v)
	}
	if s.Point != history.PointInAcquire && s.Point != history.PointInRelease {
		return 0, fmt.Errorf("params.delay: %q is for points in-acquire and in-release (a driver's call in flight), not %s", v, s.Point)
	}
	return d, nil
}

func (p *cancelCall) Heal(context.Context, *Env) (map[string]string, error) { return nil, nil }
