package explore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// Pred says whether a schedule still shows the finding.
type Pred func(ctx context.Context, s Schedule) (bool, error)

// Step is one reduction tried while shrinking.
type Step struct {
	N    int    // 1-based
	What string // "drop fault 2 (link)", "clients 3 → 2", "pause-client duration 1.5 → 1.06×TTL"
	Kept bool   // the smaller schedule still failed
}

// Shrink delta-debugs s against pred: it drops faults, repeats, triggers
// and params, lowers clients, keys and reentry, shortens the hold and the
// run, and lowers each magnitude to the boundary where pred still holds
// (bisection, to ShrinkPrecision×TTL). Each reduction is kept when pred still
// holds. It stops when ctx ends, returning the smallest schedule so far.
// s must satisfy pred.
func Shrink(ctx context.Context, s Schedule, pred Pred, onStep func(Step)) Schedule {
	m, _ := ShrinkTrail(ctx, s, pred, onStep)
	return m
}

// ShrinkTrail is Shrink, also returning every schedule it kept, in the
// order kept (each smaller than the one before; the last is the minimal).
// pred is judged on a couple of seeds, so a confirmation over more seeds
// can refute the minimal: the trail is where to look for the smallest one
// that holds.
func ShrinkTrail(ctx context.Context, s Schedule, pred Pred, onStep func(Step)) (Schedule, []Schedule) {
	var trail []Schedule
	n := 0
	try := func(what string, c Schedule) bool {
		if ctx.Err() != nil {
			return false
		}
		if _, err := c.Scenario("shrink"); err != nil {
			return false // not a valid scenario (a target gone with a client)
		}
		n++
		ok, err := pred(ctx, c)
		ok = ok && err == nil
		if onStep != nil {
			onStep(Step{N: n, What: what, Kept: ok})
		}
		if ok {
			trail = append(trail, c)
		}
		return ok
	}
	// Structural reductions, greedily until none is kept.
	for changed := true; changed && ctx.Err() == nil; {
		changed = false
		for _, c := range reductions(s) {
			if try(c.what, c.s) {
				s, changed = c.s, true
				break
			}
		}
	}
	// Magnitudes: each to its boundary.
	for i := range s.Faults {
		s = shrinkMag(ctx, s, i, try)
	}
	// The run as short as its faults now allow.
	c := s.Clone()
	FitDuration(&c, c.End())
	if c.Duration < s.Duration && try(fmt.Sprintf("duration %v → %v", s.Duration, c.Duration), c) {
		s = c
	}
	return s, trail
}

type reduction struct {
	what string
	s    Schedule
}

// reductions are the one-step smaller variants of s, biggest cut first.
func reductions(s Schedule) []reduction {
	var out []reduction
	add := func(what string, f func(*Schedule)) {
		c := s.Clone()
		f(&c)
		out = append(out, reduction{what, c})
	}
	{
		// Down to no fault at all: a workload shape alone (a hold past
		// the TTL) can be the finding.
		for i, f := range s.Faults {
			add(fmt.Sprintf("drop fault %d (%s)", i+1, f.Spec.Kind), func(c *Schedule) { c.Faults = slices.Delete(c.Faults, i, i+1) })
		}
	}
	for i, f := range s.Faults {
		if f.Spec.Count > 1 {
			add(fmt.Sprintf("fault %d fires once", i+1), func(c *Schedule) { c.Faults[i].Spec.Count, c.Faults[i].Spec.Every = 0, 0 })
		}
		if f.Spec.When != "" {
			add(fmt.Sprintf("fault %d without when", i+1), func(c *Schedule) { c.Faults[i].Spec.When = "" })
		}
		for _, k := range []string{"direction", "commands", "nodes", "mode"} {
			if _, ok := f.Spec.Params[k]; ok {
				add(fmt.Sprintf("fault %d without %s", i+1, k), func(c *Schedule) { delete(c.Faults[i].Spec.Params, k) })
			}
		}
	}
	if s.Clients > 1 {
		add(fmt.Sprintf("clients %d → %d", s.Clients, s.Clients-1), func(c *Schedule) { c.Clients-- })
	}
	if s.Keys > 1 {
		add(fmt.Sprintf("keys %d → 1", s.Keys), func(c *Schedule) { c.Keys = 1 })
	}
	if s.Reentry > 0 {
		add("no reentry", func(c *Schedule) { c.Reentry = 0 })
	}
	if s.Resource != "counter" {
		add("resource counter", func(c *Schedule) { c.Resource = "counter" })
	}
	if s.API != "" {
		add("api "+s.API+" → the lock's default", func(c *Schedule) { c.API = "" })
	}
	if s.Tasks > 1 {
		add(fmt.Sprintf("%d clients a process → a process a client", s.Tasks), func(c *Schedule) { c.Tasks = 0 })
	}
	if h := s.Hold / 4; h >= time.Millisecond && s.Hold > 2*time.Millisecond {
		add(fmt.Sprintf("hold %v → %v", s.Hold, h.Round(time.Millisecond)), func(c *Schedule) { c.Hold = h.Round(time.Millisecond) })
	}
	if s.Duration > time.Second {
		c := s.Clone()
		FitDuration(&c, c.End())
		if c.Duration < s.Duration {
			out = append(out, reduction{fmt.Sprintf("duration %v → %v", s.Duration, c.Duration), c})
		}
	}
	return out
}

// Precision of a margin's boundary, ShrinkPrecision of a shrunk
// magnitude's (×TTL; for a rate, of its distance from 1).
const (
	Precision       = 0.05
	ShrinkPrecision = 0.1
)

// shrinkMag lowers fault i's magnitude to the smallest that still fails
// (bisection between the lower bound and its value), keeping the run's
// timing in step.
func shrinkMag(ctx context.Context, s Schedule, i int, try func(string, Schedule) bool) Schedule {
	f := s.Faults[i]
	if f.MagField == "" {
		return s
	}
	sign, lo, hi := 1.0, MinMag, math.Abs(f.Mag)
	if f.MagField == MagRate {
		// distance from 1, on the side the rate is
		if f.Mag < 1 {
			sign = -1
		}
		lo, hi = ShrinkPrecision, math.Abs(f.Mag-1)
	} else if f.Mag < 0 {
		sign = -1
	}
	val := func(x float64) float64 {
		if f.MagField == MagRate {
			return math.Round((1+sign*x)*1000) / 1000
		}
		return sign * math.Round(x*1000) / 1000
	}
	with := func(x float64) Schedule {
		c := s.Clone()
		c.Faults[i].Mag = val(x)
		return c
	}
	if hi <= lo+ShrinkPrecision/2 {
		return s
	}
	// The lower bound itself first: many faults fail at any magnitude.
	if try(fmt.Sprintf("fault %d (%s) %s %g → %g", i+1, f.Spec.Kind, f.MagField, f.Mag, val(lo)), with(lo)) {
		return with(lo)
	}
	for hi-lo > ShrinkPrecision && ctx.Err() == nil {
		mid := (lo + hi) / 2
		if try(fmt.Sprintf("fault %d (%s) %s %g → %g", i+1, f.Spec.Kind, f.MagField, val(hi), val(mid)), with(mid)) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return with(hi)
}
