package faults

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

func init() {
	Register(Kind{
		Name:        history.FaultClockSkew,
		Description: "a client's clock runs with an offset (params.offset) and/or at a rate (params.rate, 1.1 = 10% fast) until healed; a driver lock's process too (libfaketime)",
		Validate:    func(s Spec) error { return validClientTarget(s.Target) },
		New: func(s Scheduled) (Injector, error) {
			off, rate, err := skewParams(s.Spec.Params)
			return &clockSkew{s: s, off: off, rate: rate}, err
		},
	})
}

func skewParams(p map[string]string) (time.Duration, float64, error) {
	var off time.Duration
	rate := 1.0
	if v, ok := p[history.ParamOffset]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, 0, fmt.Errorf("params.offset: %q is not a duration", v)
		}
		off = d
	}
	if v, ok := p[history.ParamRate]; ok {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 {
			return 0, 0, fmt.Errorf("params.rate: %q is not a positive number", v)
		}
		rate = r
	}
	if off == 0 && rate == 1 {
		return 0, 0, fmt.Errorf("params: give offset (e.g. 300ms) or rate (e.g. 1.5)")
	}
	return off, rate, nil
}

type clockSkew struct {
	s    Scheduled
	off  time.Duration
	rate float64
	c    int
}

func (k *clockSkew) Start(_ context.Context, env *Env) (Outcome, error) {
	c, err := clientTarget(env, k.s.Spec.Target)
	if err != nil {
		return Outcome{Target: k.s.Spec.Target, Effect: map[string]string{history.EffectReason: err.Error()}}, nil
	}
	k.c = c
	out := Outcome{Target: fmt.Sprintf("client %d", c), Applied: true,
		Effect: map[string]string{"offset": k.off.String(), "rate": strconv.FormatFloat(k.rate, 'f', -1, 64)}}
	// A lock in a process of its own (a driver) has its process's clock
	// set too (libfaketime), measured inside the process.
	eff, err := env.Clients.SetClock(c, k.off, k.rate)
	for key, v := range eff {
		out.Effect[key] = v
	}
	if err != nil {
		out.Applied = false
		out.Effect[history.EffectReason] = "the clock of the client's lock process did not take it: " + err.Error()
	}
	return out, nil
}

func (k *clockSkew) Heal(_ context.Context, env *Env) (map[string]string, error) {
	out := map[string]string{"offset": "0s", "rate": "1"}
	eff, err := env.Clients.SetClock(k.c, 0, 1)
	for key, v := range eff {
		out[key] = v
	}
	return out, err
}
