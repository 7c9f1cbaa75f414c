package faults

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Kind{
		Name: history.FaultClockDrift,
		Description: "the target nodes' clocks run at params.rate (3 = three times fast, 0.5 = half speed) until healed: " +
			"the server's own clock where it has one (process backend), else every 10ms each key's TTL is shortened by (rate-1)×elapsed; " +
			"effect.mechanism says which (real-clock, ttl-rewrite); default target master",
		Validate: validNodeSpec,
		New: func(s Scheduled) (Injector, error) {
			rate, err := rateParam(s.Spec.Params)
			return &clockDrift{s: s, rate: rate}, err
		},
		Needs: Needs{RealClock: true},
	})
}

func rateParam(p map[string]string) (float64, error) {
	v := p[history.ParamRate]
	r, err := strconv.ParseFloat(v, 64)
	if err != nil || r <= 0 || r == 1 {
		return 0, fmt.Errorf("params.rate: %q is not a positive number other than 1 (e.g. 1.5 = 50%% fast)", v)
	}
	return r, nil
}

// driftTick is how often clock-drift shifts TTLs.
const driftTick = 10 * time.Millisecond

type clockDrift struct {
	s       Scheduled
	rate    float64
	real    []*cluster.Node // nodes whose real clock runs at the rate
	multi   bool            // several targets: heal effects are per node
	stop    context.CancelFunc
	wg      sync.WaitGroup
	ticks   atomic.Int64
	keys    atomic.Int64
	shift   atomic.Int64 // ms taken off (or added to, when slow) the TTLs
	errs    atomic.Int64
	mu      sync.Mutex
	last    error
	clients []*redis.Client
}

// Start checks that every target answers, then shifts TTLs every driftTick
// in the background until Heal, the end of ctx, or the fault's duration.
func (f *clockDrift) Start(ctx context.Context, env *Env) (Outcome, error) {
	sc, ok := targetNodes(env, f.s.Spec.Target, "master")
	if !ok {
		return sc.out, nil
	}
	rate := f.rate
	sc.out.Effect["rate"] = strconv.FormatFloat(rate, 'f', -1, 64)
	clockMechanism(env, sc)
	f.multi = len(sc.nodes) > 1
	var cls []*redis.Client
	for _, n := range sc.nodes {
		cl := env.Cluster.AdminClient(n)
		if n.Clock != nil {
			if before, err := measureOffset(ctx, cl); err == nil {
				sc.put(n, "server_offset_before_ms", msOf(before))
			}
			_ = cl.Close()
			if _, err := n.Clock.SetRate(rate); err != nil {
				sc.fail(n, err)
				continue
			}
			f.real = append(f.real, n)
			continue
		}
		sc.out.Effect["tick"] = driftTick.String()
		res, err := shiftTTLs(ctx, cl, env.KeyPattern, 0)
		if err != nil {
			_ = cl.Close()
			sc.fail(n, err)
			continue
		}
		sc.put(n, "keys_with_ttl", strconv.FormatInt(res.keys, 10))
		cls = append(cls, cl)
	}
	out := sc.done()
	if !out.Applied || len(cls) == 0 {
		for _, cl := range cls {
			_ = cl.Close()
		}
		return out, nil
	}
	lctx, cancel := context.WithCancel(ctx)
	if f.s.Duration > 0 {
		lctx, cancel = context.WithTimeout(ctx, f.s.Duration)
	}
	f.stop, f.clients = cancel, cls
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.loop(lctx, cls, env.KeyPattern, rate)
	}()
	return out, nil
}

// loop takes (rate-1)×elapsed off every TTL each tick; sub-millisecond
// amounts are carried over so slow drifts (1.005) still add up.
func (f *clockDrift) loop(ctx context.Context, cls []*redis.Client, pattern string, rate float64) {
	t := time.NewTicker(driftTick)
	defer t.Stop()
	last := time.Now()
	carry := 0.0 // ms
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			carry += (rate - 1) * float64(now.Sub(last)) / float64(time.Millisecond)
			last = now
			f.ticks.Add(1)
			d := int64(carry)
			if d == 0 {
				continue
			}
			carry -= float64(d)
			f.shift.Add(d)
			for _, cl := range cls {
				res, err := shiftTTLs(ctx, cl, pattern, time.Duration(d)*time.Millisecond)
				f.keys.Add(res.keys)
				if err != nil && ctx.Err() == nil {
					f.errs.Add(1)
					f.mu.Lock()
					f.last = err
					f.mu.Unlock()
				}
			}
		}
	}
}

// Heal puts the real clocks back to real speed, keeping the offset they
// reached (a clock that ran fast does not jump back), and stops the TTL
// rewriting.
func (f *clockDrift) Heal(ctx context.Context, env *Env) (map[string]string, error) {
	eff := map[string]string{}
	for _, n := range f.real {
		key := func(k string) string {
			if f.multi {
				return n.Name + "." + k
			}
			return k
		}
		off, err := n.Clock.SetRate(1)
		if err != nil {
			eff[key(history.EffectError)] = err.Error()
			continue
		}
		eff[key("clock_offset_ms")] = msOf(off)
		cl := env.Cluster.AdminClient(n)
		if m, err := measureOffset(ctx, cl); err == nil {
			eff[key("server_offset_ms")] = msOf(m)
		}
		_ = cl.Close()
	}
	if f.stop == nil {
		return eff, nil
	}
	f.stop()
	f.wg.Wait()
	for _, cl := range f.clients {
		_ = cl.Close()
	}
	eff["ticks"] = strconv.FormatInt(f.ticks.Load(), 10)
	eff["keys_touched"] = strconv.FormatInt(f.keys.Load(), 10)
	eff["shifted_ms"] = strconv.FormatInt(f.shift.Load(), 10)
	eff["errors"] = strconv.FormatInt(f.errs.Load(), 10)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last != nil {
		eff["last_error"] = f.last.Error()
	}
	return eff, nil
}
