package faults

import (
	"context"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

func init() {
	Register(Kind{
		Name:        history.FaultCrashClient,
		Instant:     true,
		Description: "a client dies at a point of its cycle without releasing what it holds",
		Validate: func(s Spec) error {
			if err := validPointTarget(s.Target); err != nil {
				return err
			}
			return validPoint(s.Point)
		},
		New: func(s Scheduled) (Injector, error) { return &crashClient{s: s}, nil },
	})
}

type crashClient struct{ s Scheduled }

func (p *crashClient) Start(ctx context.Context, env *Env) (Outcome, error) {
	out, h := atPoint(ctx, env, p.s.Spec, 4*env.TTL+time.Second, env.Clients.Crash)
	if out.Applied {
		out.Effect[history.EffectCrashedAt] = ms(h.From)
		for k, v := range h.Effect {
			out.Effect[k] = v
		}
	}
	return out, nil
}

func (p *crashClient) Heal(context.Context, *Env) (map[string]string, error) { return nil, nil }
