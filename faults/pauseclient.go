package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

func init() {
	Register(Kind{
		Name:        history.FaultPauseClient,
		Description: "freeze one client and its lock's background work for duration (a stop-the-world GC pause), at a point of its cycle",
		Validate: func(s Spec) error {
			if s.Duration <= 0 {
				return fmt.Errorf("duration: must be > 0, got %v", s.Duration)
			}
			if err := validPointTarget(s.Target); err != nil {
				return err
			}
			return validPoint(s.Point)
		},
		New:      func(s Scheduled) (Injector, error) { return &pauseClient{s: s}, nil },
		Outlasts: true,
	})
}

type pauseClient struct{ s Scheduled }

// Start arms the pause and waits (bounded by the fault's duration plus the
// TTL) until the client actually froze and resumed, so the effect recorded is
// the measured pause window.
func (p *pauseClient) Start(ctx context.Context, env *Env) (Outcome, error) {
	out, h := atPoint(ctx, env, p.s.Spec, p.s.Duration+4*env.TTL+time.Second,
		func(ctx context.Context, cs []int, point string) <-chan Hit {
			return env.Clients.Pause(ctx, cs, point, p.s.Duration)
		})
	if out.Applied {
		out.Effect["paused_at_ms"] = ms(h.From)
		out.Effect["resumed_at_ms"] = ms(h.To)
		out.Effect["paused_ms"] = ms(h.To - h.From)
		for k, v := range h.Effect {
			out.Effect[k] = v
		}
	}
	return out, nil
}

func (p *pauseClient) Heal(context.Context, *Env) (map[string]string, error) { return nil, nil }
