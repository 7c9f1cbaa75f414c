package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/lockchaos/lockchaos/history"
)

func init() {
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
