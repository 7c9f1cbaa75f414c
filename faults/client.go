package faults

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// Client-side faults: they act through the workload's ClientControl.

func validPoint(p string) error {
	if p == "" || p == history.PointNow || slices.Contains(history.Points, p) {
		return nil
	}
	return fmt.Errorf("point: %q is not one of %s, %s", p, history.PointNow, strings.Join(history.Points, ", "))
}

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
	Register(Kind{
		Name:        history.FaultCrashClient,
		Description: "a client dies at a point of its cycle without releasing what it holds",
		Validate: func(s Spec) error {
			if err := validPointTarget(s.Target); err != nil {
				return err
			}
			return validPoint(s.Point)
		},
		New: func(s Scheduled) (Injector, error) { return &crashClient{s: s}, nil },
	})
	Register(Kind{
		Name:        history.FaultClockSkew,
		Description: "a client's clock runs with an offset (params.offset) and/or at a rate (params.rate, 1.1 = 10% fast) until healed",
		Validate:    func(s Spec) error { return validClientTarget(s.Target) },
		New: func(s Scheduled) (Injector, error) {
			off, rate, err := skewParams(s.Spec.Params)
			return &clockSkew{s: s, off: off, rate: rate}, err
		},
	})
	Register(Kind{
		Name:        history.FaultCutClient,
		Description: "cut one client off from nodes (params.nodes, 1-based, e.g. 4,5; default all) through a go-redis hook: params.mode reset (fail at once) or drop (hang until the command times out)",
		Validate:    func(s Spec) error { return validClientTarget(s.Target) },
		New: func(s Scheduled) (Injector, error) {
			k := &cutClient{s: s, nodes: s.Spec.Params[history.ParamNodes]}
			if k.nodes != "" {
				if _, err := nodeIndexes(k.nodes, 0); err != nil {
					return nil, fmt.Errorf("params.nodes: %v", err)
				}
			}
			var err error
			k.mode, err = cutMode(s.Spec.Params)
			return k, err
		},
	})
	Register(Kind{
		Name:        history.FaultStallCommands,
		Description: "delay chosen commands (params.commands, comma-separated; empty = all) of one client by params.delay, through a go-redis hook",
		Validate:    func(s Spec) error { return validClientTarget(s.Target) },
		New: func(s Scheduled) (Injector, error) {
			p := s.Spec.Params
			d, err := time.ParseDuration(p[history.ParamDelay])
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("params.delay: %q is not a positive duration", p[history.ParamDelay])
			}
			k := &stall{s: s, delay: d}
			if v := strings.TrimSpace(p[history.ParamCommands]); v != "" {
				for _, c := range strings.Split(v, ",") {
					k.cmds = append(k.cmds, strings.ToLower(strings.TrimSpace(c)))
				}
			}
			return k, nil
		},
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
	}
	return out, nil
}

func (p *pauseClient) Heal(context.Context, *Env) (map[string]string, error) { return nil, nil }

// atPoint arms a point fault (pause, crash) through arm on the clients of
// s.Target, at s.Point (default now), and waits at most wait for one of them
// to reach it. The outcome names the client hit, or says why none was.
func atPoint(ctx context.Context, env *Env, s Spec, wait time.Duration, arm func(context.Context, []int, string) <-chan Hit) (Outcome, Hit) {
	cs, err := pointTargets(env, s.Target)
	if err != nil {
		return Outcome{Target: s.Target, Effect: map[string]string{history.EffectReason: err.Error()}}, Hit{}
	}
	point := cmp.Or(s.Point, history.PointNow)
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	h, ok := <-arm(wctx, cs, point)
	out := Outcome{Effect: map[string]string{"point": point}}
	if ok {
		out.Target, out.Applied = fmt.Sprintf("client %d", h.Client), true
		return out, h
	}
	out.Target = "any client"
	if len(cs) == 1 {
		out.Target = fmt.Sprintf("client %d", cs[0])
	}
	out.Effect[history.EffectReason] = out.Target + " did not reach point " + point + " in time"
	return out, h
}

func ms(ns int64) string { return strconv.FormatFloat(history.MS(ns), 'f', 2, 64) }

type crashClient struct{ s Scheduled }

func (p *crashClient) Start(ctx context.Context, env *Env) (Outcome, error) {
	out, h := atPoint(ctx, env, p.s.Spec, 4*env.TTL+time.Second, env.Clients.Crash)
	if out.Applied {
		out.Effect["crashed_at_ms"] = ms(h.From)
	}
	return out, nil
}

func (p *crashClient) Heal(context.Context, *Env) (map[string]string, error) { return nil, nil }

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
	env.Clients.SetClock(c, k.off, k.rate)
	return Outcome{Target: fmt.Sprintf("client %d", c), Applied: true,
		Effect: map[string]string{"offset": k.off.String(), "rate": strconv.FormatFloat(k.rate, 'f', -1, 64)}}, nil
}

func (k *clockSkew) Heal(_ context.Context, env *Env) (map[string]string, error) {
	env.Clients.SetClock(k.c, 0, 1)
	return map[string]string{"offset": "0s", "rate": "1"}, nil
}

type stall struct {
	s     Scheduled
	delay time.Duration
	cmds  []string
	undo  func()
}

func (k *stall) Start(_ context.Context, env *Env) (Outcome, error) {
	c, err := clientTarget(env, k.s.Spec.Target)
	if err != nil {
		return Outcome{Target: k.s.Spec.Target, Effect: map[string]string{history.EffectReason: err.Error()}}, nil
	}
	k.undo = env.Clients.Stall(c, k.cmds, k.delay)
	return Outcome{Target: fmt.Sprintf("client %d", c), Applied: true,
		Effect: map[string]string{"delay": k.delay.String(), "commands": strings.Join(k.cmds, ",")}}, nil
}

func (k *stall) Heal(context.Context, *Env) (map[string]string, error) {
	if k.undo != nil {
		k.undo()
	}
	return nil, nil
}

type cutClient struct {
	s     Scheduled
	nodes string // params.nodes as given ("": all)
	mode  string
	undo  func()
}

func (k *cutClient) Start(_ context.Context, env *Env) (Outcome, error) {
	c, err := clientTarget(env, k.s.Spec.Target)
	if err != nil {
		return Outcome{Target: k.s.Spec.Target, Effect: map[string]string{history.EffectReason: err.Error()}}, nil
	}
	n := len(env.Cluster.Endpoints())
	var nodes []int
	if k.nodes != "" {
		if nodes, err = nodeIndexes(k.nodes, n); err != nil {
			return Outcome{Target: fmt.Sprintf("client %d", c), Effect: map[string]string{history.EffectReason: err.Error()}}, nil
		}
	} else {
		for i := 0; i < n; i++ {
			nodes = append(nodes, i)
		}
	}
	if k.undo, err = env.Clients.Cut(c, nodes, k.mode); err != nil {
		return Outcome{Target: fmt.Sprintf("client %d", c)}, err
	}
	cut := make([]string, len(nodes))
	for i, x := range nodes {
		cut[i] = strconv.Itoa(x + 1)
	}
	return Outcome{Target: fmt.Sprintf("client %d", c), Applied: true,
		Effect: map[string]string{"mode": k.mode, "nodes": strings.Join(cut, ",")}}, nil
}

func (k *cutClient) Heal(context.Context, *Env) (map[string]string, error) {
	if k.undo != nil {
		k.undo()
	}
	return nil, nil
}

// cutMode is params.mode of the kinds that cut a link: reset (default) or
// drop.
func cutMode(p map[string]string) (string, error) {
	switch m := p[history.ParamMode]; m {
	case "":
		return "reset", nil
	case "reset", "drop":
		return m, nil
	default:
		return "", fmt.Errorf("params.mode: %q is not reset or drop", m)
	}
}
