package faults

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

func init() {
	Register(Kind{
		Name:    history.FaultRestartNode,
		Instant: true,
		Description: "kill the target nodes and start them again: params.mode empty (no data), aof (same dir, needs aof: true) " +
			"or delayed (down for params.delay, default 2×TTL, then empty: the delayed-restart mitigation); default target master",
		Validate: validNodeSpec,
		New: func(s Scheduled) (Injector, error) {
			mode, delay, err := restartParams(s.Spec.Params)
			return &restartNode{s: s, mode: mode, delay: delay}, err
		},
		// A restart must not kill a node the previous firing is still
		// bringing back (a container restart can outlast the period).
		Serial: true,
	})
}

// restartParams: mode empty (default), aof or delayed; a delayed restart's
// delay 0 means 2×TTL (restartNode.Start applies it).
func restartParams(p map[string]string) (mode string, delay time.Duration, err error) {
	mode = p[history.ParamMode]
	if mode == "" {
		mode = "empty"
		if p["empty"] == "false" {
			mode = "aof"
		}
	}
	if mode != "empty" && mode != "aof" && mode != "delayed" {
		return "", 0, fmt.Errorf("params.mode: %q is not empty, aof or delayed", mode)
	}
	if delay, err = durationParam(p, history.ParamDelay, false); err != nil {
		return "", 0, err
	}
	if delay < 0 {
		return "", 0, fmt.Errorf("params.delay: %v is negative", delay)
	}
	return mode, delay, nil
}

type restartNode struct {
	s     Scheduled
	mode  string
	delay time.Duration
}

// Start kills, waits out the delay (cut short if ctx ends: a node must not
// stay down through the heal phase) and restarts. It returns when the nodes
// answer again.
func (f *restartNode) Start(ctx context.Context, env *Env) (Outcome, error) {
	sc, ok := targetNodes(env, f.s.Spec.Target, "master")
	if !ok {
		return sc.out, nil
	}
	mode, delay := f.mode, f.delay
	if mode == "delayed" && delay == 0 {
		delay = 2 * env.TTL
		if delay == 0 {
			delay = time.Second
		}
	}
	sc.out.Effect["mode"] = mode
	if delay > 0 {
		sc.out.Effect["delay"] = delay.String()
	}
	type down struct {
		n *cluster.Node
		t time.Time
	}
	var downs []down
	for _, n := range sc.nodes {
		size, err := dbsize(ctx, env, n)
		if err != nil {
			sc.fail(n, fmt.Errorf("dbsize before: %w", err))
			continue
		}
		sc.put(n, "dbsize_before", strconv.FormatInt(size, 10))
		if mode == "aof" {
			if on, err := appendonly(ctx, env, n); err != nil || !on {
				sc.fail(n, fmt.Errorf("mode aof: the node runs without appendonly (the scenario needs aof: true) %v", errOrNil(err)))
				continue
			}
		}
		sc.put(n, "pid_before", strconv.Itoa(n.Ctl.Pid()))
		if err := n.Ctl.Kill(); err != nil {
			sc.fail(n, fmt.Errorf("kill: %w", err))
			continue
		}
		downs = append(downs, down{n, time.Now()})
	}
	if len(downs) > 0 && delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			sc.out.Effect["delay_cut_short"] = "run ended"
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	for _, d := range downs {
		err := restartRejoin(rctx, env, d.n, mode != "aof")
		sc.put(d.n, "down_ms", strconv.FormatInt(time.Since(d.t).Milliseconds(), 10))
		if err != nil {
			sc.fail(d.n, err)
			continue
		}
		sc.put(d.n, "pid_after", strconv.Itoa(d.n.Ctl.Pid()))
		size, err := dbsize(rctx, env, d.n)
		if err != nil {
			sc.fail(d.n, fmt.Errorf("dbsize after: %w", err))
			continue
		}
		sc.put(d.n, "dbsize_after", strconv.FormatInt(size, 10))
	}
	return sc.done(), nil
}

func (f *restartNode) Heal(context.Context, *Env) (map[string]string, error) { return nil, nil }

func appendonly(ctx context.Context, env *Env, n *cluster.Node) (bool, error) {
	cl := env.Cluster.AdminClient(n)
	defer cl.Close()
	v, err := cl.ConfigGet(ctx, "appendonly").Result()
	if err != nil {
		return false, err
	}
	return v["appendonly"] == "yes", nil
}
