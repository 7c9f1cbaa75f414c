package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

func init() {
	Register(Kind{
		Name:    history.FaultSigterm,
		Instant: true,
		Description: "a client's process is stopped gracefully, as a pod being deleted is: SIGTERM at a point of its cycle " +
			"(while it acquires, holds or releases), its runtime's shutdown hooks run (a driver with the sigterm extension " +
			"runs the application's: a with block's exit, JVM shutdown hooks, process.on('SIGTERM')), and it is killed if " +
			"it has not ended after params.grace (default 2 × TTL + 1 s). The client acts no more. For a lock in a driver " +
			"process only (a Go lock has no process of its own); in-acquire and in-release signal while the driver's call " +
			"is in flight, params.delay (default 0) after its request",
		Validate: func(s Spec) error {
			if err := validPointTarget(s.Target); err != nil {
				return err
			}
			if err := validPoint(s.Point); err != nil {
				return err
			}
			_, err := sigtermParams(s, time.Second)
			return err
		},
		New: func(s Scheduled) (Injector, error) { return &sigtermFault{s: s}, nil },
	})
}

type sigtermFault struct{ s Scheduled }

type sigtermArgs struct{ delay, grace time.Duration }

// sigtermParams reads params.delay and params.grace (grace's default from
// the run's TTL).
func sigtermParams(s Spec, ttl time.Duration) (sigtermArgs, error) {
	a := sigtermArgs{grace: 2*ttl + time.Second}
	if v := s.Params[history.ParamDelay]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > time.Minute {
			return a, fmt.Errorf("params.delay: %q is not a duration from 0 to 1m", v)
		}
		if s.Point != history.PointInAcquire && s.Point != history.PointInRelease {
			return a, fmt.Errorf("params.delay: %q is for points in-acquire and in-release (a driver's call in flight), not %q", v, s.Point)
		}
		a.delay = d
	}
	if v := s.Params[history.ParamGrace]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > 5*time.Minute {
			return a, fmt.Errorf("params.grace: %q is not a duration above 0 and up to 5m", v)
		}
		a.grace = d
	}
	return a, nil
}

// Start arms the signal and waits (bounded by four TTLs and a second) for
// a client to reach the point, then for its process to end.
func (p *sigtermFault) Start(ctx context.Context, env *Env) (Outcome, error) {
	args, _ := sigtermParams(p.s.Spec, env.TTL) // validated
	arm := func(ctx context.Context, cs []int, point string) <-chan Hit {
		return env.Clients.Terminate(ctx, cs, point, args.delay, args.grace)
	}
	out, h := atPoint(ctx, env, p.s.Spec, 4*env.TTL+time.Second, arm)
	if out.Applied {
		for k, v := range h.Effect {
			out.Effect[k] = v
		}
		if _, failed := h.Effect[history.EffectReason]; failed {
			out.Applied = false // a lock with no process of its own
		}
	}
	return out, nil
}

func (p *sigtermFault) Heal(context.Context, *Env) (map[string]string, error) { return nil, nil }
