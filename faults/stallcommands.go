package faults

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

func init() {
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

type stall struct {
	s     Scheduled
	delay time.Duration
	cmds  []string
	undo  func() map[string]string
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
		return k.undo(), nil
	}
	return nil, nil
}
