package lockimpl

import (
	"context"
	"sync/atomic"
	"time"
)

// Clock is a client's view of time. Implementations read time and wait only
// through it, so that clock-skew faults reach them.
type Clock interface {
	Now() time.Time
	// Sleep waits d of this clock's time, or until ctx is done.
	Sleep(ctx context.Context, d time.Duration) error
}

// RealClock is the machine's clock.
type RealClock struct{}

func (RealClock) Now() time.Time { return time.Now() }

func (RealClock) Sleep(ctx context.Context, d time.Duration) error { return sleepCtx(ctx, d) }

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// SkewClock is a clock that can be set to run with an offset and at a rate
// relative to the real clock, at run time (clock-skew faults). Its zero value
// is not usable: call NewSkewClock.
type SkewClock struct {
	// state packs an immutable snapshot so readers never lock.
	state atomic.Pointer[skewState]
}

type skewState struct {
	base   time.Time     // real time at which the rate took effect
	offset time.Duration // skewed(base) - base
	rate   float64       // skewed seconds per real second
}

// NewSkewClock returns a clock that starts equal to the real clock.
func NewSkewClock() *SkewClock {
	c := &SkewClock{}
	c.state.Store(&skewState{base: time.Now(), rate: 1})
	return c
}

func (s *skewState) at(real time.Time) time.Time {
	// No offset and rate 1 (every client that no skew fault touched): the
	// identity. A lock cycle reads its client's clock three times or more,
	// and the mapping cost about 7% of the harness's own CPU in the bench's
	// cycle (issue 27).
	if s.offset == 0 && s.rate == 1 {
		return real
	}
	el := real.Sub(s.base)
	return s.base.Add(s.offset + time.Duration(float64(el)*s.rate))
}

// Now returns the skewed time.
func (c *SkewClock) Now() time.Time { return c.state.Load().at(time.Now()) }

// Sleep waits d of skewed time (d/rate of real time).
func (c *SkewClock) Sleep(ctx context.Context, d time.Duration) error {
	r := c.state.Load().rate
	return sleepCtx(ctx, time.Duration(float64(d)/r))
}

// Set makes the clock read real time + offset from now on, advancing at rate
// (1 = real speed, 1.1 = 10% fast). rate must be positive.
func (c *SkewClock) Set(offset time.Duration, rate float64) {
	if rate <= 0 {
		rate = 1
	}
	c.state.Store(&skewState{base: time.Now(), offset: offset, rate: rate})
}

// Skew reports the current offset from real time and the rate.
func (c *SkewClock) Skew() (time.Duration, float64) {
	s := c.state.Load()
	now := time.Now()
	return s.at(now).Sub(now), s.rate
}
