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
		Name:        history.FaultKillNode,
		Description: "kill the target nodes (SIGKILL); healing restarts them empty; default target master",
		Validate:    validNodeSpec,
		New:         func(s Scheduled) (Injector, error) { return &killNode{s: s}, nil },
	})
}

type killNode struct {
	s     Scheduled
	nodes []*cluster.Node
}

func (f *killNode) Start(_ context.Context, env *Env) (Outcome, error) {
	sc, ok := targetNodes(env, f.s.Spec.Target, "master")
	if !ok {
		return sc.out, nil
	}
	for _, n := range sc.nodes {
		pid := n.Ctl.Pid()
		sc.put(n, "pid", strconv.Itoa(pid))
		if err := n.Ctl.Kill(); err != nil {
			sc.fail(n, fmt.Errorf("kill: %w", err))
			continue
		}
		f.nodes = append(f.nodes, n)
		st := waitState(n, time.Second, func(s string) bool { return s == "gone" })
		sc.put(n, "state_after", st)
		if st != "gone" {
			sc.fail(n, fmt.Errorf("pid %d still %s after SIGKILL", pid, st))
			continue
		}
		sc.put(n, "exit", "killed (SIGKILL)")
	}
	return sc.done(), nil
}

func (f *killNode) Heal(ctx context.Context, env *Env) (map[string]string, error) {
	eff := map[string]string{}
	var errs []error
	for _, n := range f.nodes {
		if err := restartRejoin(ctx, env, n, true); err != nil {
			errs = append(errs, err)
			continue
		}
		eff[n.Name+".pid"] = strconv.Itoa(n.Ctl.Pid())
		eff[n.Name+".restarted"] = "empty"
	}
	return eff, errors.Join(errs...)
}
