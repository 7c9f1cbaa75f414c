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
		Instant:     true,
		Description: "freeze one client and its lock's background work for duration (a stop-the-world GC pause), at a point of its cycle; params.mode block-loop: a driver lock's event loop blocked instead of its process stopped (Node)",
		Validate: func(s Spec) error {
			if s.Duration <= 0 {
				return fmt.Errorf("duration: must be > 0, got %v", s.Duration)
			}
			if err := validPointTarget(s.Target); err != nil {
				return err
			}
			return validPoint(s.Point)
		},
		New: func(s Scheduled) (Injector, error) {
			switch m := s.Spec.Params[history.ParamMode]; m {
			case "", PauseSigstop, PauseBlockLoop:
				return &pauseClient{s: s, blockLoop: m == PauseBlockLoop}, nil
			default:
				return nil, fmt.Errorf("params.mode: %q is not %s or %s", m, PauseSigstop, PauseBlockLoop)
			}
		},
		Outlasts: true,
	})
}

// Modes of pause-client (params.mode): the client's process stopped
// (SIGSTOP, the default; for an in-process lock, its goroutines held at
// the gate), or its event loop blocked (block-loop: a driver that declares
// the block_loop extension, the Node drivers).
const (
	PauseSigstop   = "sigstop"
	PauseBlockLoop = "block-loop"
)

type pauseClient struct {
	s         Scheduled
	blockLoop bool
}

// Start arms the pause and waits (bounded by the fault's duration plus the
// TTL) until the client actually froze and resumed, so the effect recorded is
// the measured pause window.
func (p *pauseClient) Start(ctx context.Context, env *Env) (Outcome, error) {
	out, h := atPoint(ctx, env, p.s.Spec, p.s.Duration+4*env.TTL+time.Second,
		func(ctx context.Context, cs []int, point string) <-chan Hit {
			if p.blockLoop {
				return env.Clients.BlockLoop(ctx, cs, point, p.s.Duration)
			}
			return env.Clients.Pause(ctx, cs, point, p.s.Duration)
		})
	if out.Applied {
		out.Effect["paused_at_ms"] = ms(h.From)
		out.Effect["resumed_at_ms"] = ms(h.To)
		out.Effect["paused_ms"] = ms(h.To - h.From)
		for k, v := range h.Effect {
			out.Effect[k] = v
		}
		if _, failed := h.Effect[history.EffectReason]; failed {
			out.Applied = false // the client froze, its lock's loop did not block
		}
	}
	return out, nil
}

func (p *pauseClient) Heal(context.Context, *Env) (map[string]string, error) { return nil, nil }
