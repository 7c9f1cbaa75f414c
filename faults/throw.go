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
		Name:    history.FaultThrow,
		Instant: true,
		Description: "the application's code in one client's critical section raises (after-acquire, before-write, in-write, " +
			"before-release): the rest of the critical section is skipped and the lock is released on the exception path, " +
			"as the application's idiom does (a Go deferred release recovering the panic; for a lock in a driver process, " +
			"through the protocol's throw extension: a context manager's exit, a using() routine that rejects, a finally)",
		Validate: func(s Spec) error {
			if err := validPointTarget(s.Target); err != nil {
				return err
			}
			if !slices.Contains(ThrowPoints, s.Point) {
				return fmt.Errorf("point: %q is not one of %s (a point in the critical section)", s.Point, strings.Join(ThrowPoints, ", "))
			}
			return nil
		},
		New: func(s Scheduled) (Injector, error) { return &throwFault{s: s}, nil },
	})
}

// ThrowPoints are the points of the critical section, where the
// application's code runs.
var ThrowPoints = []string{history.PointAfterAcquire, history.PointBeforeWrite, history.PointInWrite, history.PointBeforeRelease}

type throwFault struct{ s Scheduled }

// Start arms the throw and waits (bounded by four TTLs and a second) for a
// client to reach the point, then for its release on the exception path.
func (p *throwFault) Start(ctx context.Context, env *Env) (Outcome, error) {
	out, h := atPoint(ctx, env, p.s.Spec, 4*env.TTL+time.Second, env.Clients.Throw)
	if out.Applied {
		for k, v := range h.Effect {
			out.Effect[k] = v
		}
		if _, failed := h.Effect[history.EffectReason]; failed {
			out.Applied = false // a driver without the throw extension
		}
	}
	return out, nil
}

func (p *throwFault) Heal(context.Context, *Env) (map[string]string, error) { return nil, nil }
