package faults

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockchaos/lockchaos/history"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/redis/go-redis/v9"
)

// Server clock faults, by one of two mechanisms, recorded in the effect as
// "mechanism":
//
// real-clock: the node runs with its own wall clock (cluster.Spec.RealClock,
// process backend, see cluster/clock.go). A jump moves it, a drift sets its
// rate; TIME, expiry, PXAT and PEXPIREAT all follow it, for keys set before
// and after. The effect records the server's TIME against the host clock
// before and after (server_offset_*_ms).
//
// ttl-rewrite, the fallback where a node has no real clock (other backends,
// no gcc, LOCKCHAOS_REAL_CLOCK=off): Redis keeps a key's expiry as an
// absolute time on its own clock, and a lock's TTL is relative, so when the
// clock jumps forward by Δ every key's remaining TTL shrinks by Δ. Shifting
// each existing key's expiry by Δ is exactly what a jump does to lock keys,
// but TIME is unchanged and keys set afterwards are not affected.

const (
	realClock  = "real-clock"
	ttlRewrite = "ttl-rewrite"
)

// measureTimeout bounds a TIME measure: a paused node must not hold the fault.
const measureTimeout = 500 * time.Millisecond

// clockMechanism records which mechanism acts on each node: plain
// "mechanism" when all share one (per node as well when there are several),
// and, for ttl-rewrite, why the cluster has no real clock when it says.
func clockMechanism(env *Env, sc *nodeScope) {
	seen := map[string]bool{}
	for _, n := range sc.nodes {
		m := ttlRewrite
		if n.Clock != nil {
			m = realClock
		}
		seen[m] = true
		sc.put(n, "mechanism", m)
	}
	switch {
	case len(seen) > 1:
		sc.out.Effect[history.EffectMechanism] = "mixed"
	default:
		for m := range seen {
			sc.out.Effect[history.EffectMechanism] = m
		}
	}
	if seen[ttlRewrite] && env.Cluster.ClockWhy != "" {
		sc.out.Effect["clock_note"] = env.Cluster.ClockWhy
	}
}

// measureOffset is the node's TIME minus the host clock.
func measureOffset(ctx context.Context, cl *redis.Client) (time.Duration, error) {
	mctx, cancel := context.WithTimeout(ctx, measureTimeout)
	defer cancel()
	off, _, err := cluster.MeasureOffset(mctx, cl)
	return off, err
}

func msOf(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
}

// shiftScript moves the expiry of every key in KEYS that has one by
// -ARGV[1] ms, leaving at least 1ms so the key still expires (and the
// observer sees "expired", not "del"). PEXPIRETIME/PEXPIREAT keep it exact;
// servers before 7.0 fall back to PTTL/PEXPIRE. ARGV[1] = 0 only counts.
// It returns {shifted, sample key, pttl before, pttl after}.
var shiftScript = redis.NewScript(`
local d = tonumber(ARGV[1])
local n = 0
local sample
for _, k in ipairs(KEYS) do
  local t = redis.call('PTTL', k)
  if t > 0 then
    local nt = t - d
    if d ~= 0 then
      if nt < 1 then
        nt = 1
        redis.call('PEXPIRE', k, 1)
      else
        local at = redis.pcall('PEXPIRETIME', k)
        if type(at) == 'number' and at > 0 then
          redis.call('PEXPIREAT', k, at - d)
        else
          redis.call('PEXPIRE', k, nt)
        end
      end
    end
    n = n + 1
    if sample == nil then sample = {k, t, nt} end
  end
end
if sample == nil then return {n} end
return {n, sample[1], sample[2], sample[3]}
`)

// shiftResult is what one pass over a node's keys did.
type shiftResult struct {
	keys          int64
	sample        string
	before, after int64
}

// shiftTTLs shifts the expiry of every key matching pattern ("" = all) on
// the node behind cl by d (rounded to whole ms), SCANning in batches.
func shiftTTLs(ctx context.Context, cl *redis.Client, pattern string, d time.Duration) (shiftResult, error) {
	var res shiftResult
	var cursor uint64
	if pattern == "" {
		pattern = "*"
	}
	for {
		keys, next, err := cl.Scan(ctx, cursor, pattern, 512).Result()
		if err != nil {
			return res, fmt.Errorf("SCAN: %w", err)
		}
		if len(keys) > 0 {
			v, err := shiftScript.Run(ctx, cl, keys, d.Milliseconds()).Slice()
			if err != nil {
				return res, fmt.Errorf("shift TTLs: %w", err)
			}
			res.keys += toInt(v[0])
			if len(v) == 4 && res.sample == "" {
				res.sample, res.before, res.after = fmt.Sprint(v[1]), toInt(v[2]), toInt(v[3])
			}
		}
		if cursor = next; cursor == 0 {
			return res, nil
		}
	}
}

func toInt(v any) int64 {
	i, _ := v.(int64)
	return i
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

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func (f *clockJump) Heal(context.Context, *Env) (map[string]string, error) { return nil, nil }

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
