package faults

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Kind{
		Name:    history.FaultClockJump,
		Instant: true,
		Description: "the target nodes' clocks jump by params.delta (positive: forward): the server's own clock (TIME, expiry, " +
			"PXAT) where it has one (process backend), else every key's TTL is shifted by it (at least 1ms is left), as a wall-clock " +
			"jump does to relative TTLs; effect.mechanism says which (real-clock, ttl-rewrite); default target master",
		Validate: validNodeSpec,
		New: func(s Scheduled) (Injector, error) {
			delta, err := durationParam(s.Spec.Params, history.ParamDelta, true)
			return &clockJump{s: s, delta: delta}, err
		},
		Needs: Needs{RealClock: true},
	})
}

type clockJump struct {
	s     Scheduled
	delta time.Duration
}

func (f *clockJump) Start(ctx context.Context, env *Env) (Outcome, error) {
	sc, ok := targetNodes(env, f.s.Spec.Target, "master")
	if !ok {
		return sc.out, nil
	}
	delta := f.delta
	sc.out.Effect["delta"] = delta.String()
	clockMechanism(env, sc)
	for _, n := range sc.nodes {
		cl := env.Cluster.AdminClient(n)
		if n.Clock != nil {
			jumpClock(ctx, sc, n, cl, delta)
			_ = cl.Close()
			continue
		}
		res, err := shiftTTLs(ctx, cl, env.KeyPattern, delta)
		_ = cl.Close()
		if err != nil {
			sc.fail(n, err)
			continue
		}
		sc.put(n, "keys_shifted", strconv.FormatInt(res.keys, 10))
		if res.sample != "" {
			sc.put(n, "key", res.sample)
			sc.put(n, "pttl_before_ms", strconv.FormatInt(res.before, 10))
			sc.put(n, "pttl_after_ms", strconv.FormatInt(res.after, 10))
		}
	}
	return sc.done(), nil
}

// jumpClock moves n's real clock by delta and measures it. The jump takes
// effect even when the node does not answer (a paused server's clock moves
// too); only the measure is then missing.
func jumpClock(ctx context.Context, sc *nodeScope, n *cluster.Node, cl *redis.Client, delta time.Duration) {
	before, berr := measureOffset(ctx, cl)
	off, err := n.Clock.Jump(delta)
	if err != nil {
		sc.fail(n, err)
		return
	}
	sc.put(n, "clock_offset_ms", msOf(off))
	after, aerr := measureOffset(ctx, cl)
	if berr != nil || aerr != nil {
		sc.put(n, "measure_error", fmt.Sprint(firstErr(berr, aerr)))
		return
	}
	sc.put(n, "server_offset_before_ms", msOf(before))
	sc.put(n, "server_offset_after_ms", msOf(after))
	sc.put(n, "measured_jump_ms", msOf(after-before))
}

func (f *clockJump) Heal(context.Context, *Env) (map[string]string, error) { return nil, nil }
