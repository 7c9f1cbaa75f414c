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

// What the server clock faults share (clock-jump, clock-drift: a file
// each): they act by one of two mechanisms, recorded in the effect as
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

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
