package faults

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

func init() {
	Register(Kind{
		Name:        history.FaultPauseNode,
		Description: "freeze the target nodes (SIGSTOP) until healed (SIGCONT); default target master",
		Validate:    validNodeSpec,
		New:         func(s Scheduled) (Injector, error) { return &pauseNode{s: s}, nil },
	})
}

type pauseNode struct {
	s     Scheduled
	nodes []*cluster.Node
}

func (f *pauseNode) Start(_ context.Context, env *Env) (Outcome, error) {
	sc, ok := targetNodes(env, f.s.Spec.Target, "master")
	if !ok {
		return sc.out, nil
	}
	for _, n := range sc.nodes {
		before := n.Ctl.State()
		sc.put(n, "pid", strconv.Itoa(n.Ctl.Pid()))
		sc.put(n, "state_before", before)
		if err := n.Ctl.Pause(); err != nil {
			sc.fail(n, fmt.Errorf("pause: %w", err))
			continue
		}
		f.nodes = append(f.nodes, n)
		after := waitState(n, time.Second, stopped)
		sc.put(n, "state_after", after)
		if !stopped(after) {
			sc.fail(n, fmt.Errorf("state %s after SIGSTOP, not stopped", after))
		}
	}
	return sc.done(), nil
}

func (f *pauseNode) Heal(context.Context, *Env) (map[string]string, error) {
	eff := map[string]string{}
	var errs []error
	for _, n := range f.nodes {
		if err := n.Ctl.Resume(); err != nil {
			errs = append(errs, fmt.Errorf("resume %s: %w", n.Name, err))
		}
		eff[n.Name+".state_after"] = waitState(n, time.Second, func(s string) bool { return !stopped(s) })
	}
	return eff, errors.Join(errs...)
}
