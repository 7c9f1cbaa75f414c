package faults

import (
	"cmp"
	"fmt"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

func init() {
	Register(Kind{
		Name: history.FaultLatency,
		Description: "delay node replies through the fault proxy (needs cluster proxy: true) by params.latency " +
			"± params.jitter (millisecond resolution); params.direction from-node (default), to-node or both",
		Validate: func(s Spec) error { return validNodeTarget(s.Target) },
		New: func(s Scheduled) (Injector, error) {
			f := &netFault{s: s, kind: history.FaultLatency, dir: cmp.Or(s.Spec.Params[history.ParamDirection], "from-node")}
			var err error
			if f.latency, f.jitter, err = latencyParams(s.Spec.Params); err != nil {
				return nil, err
			}
			return f, validDirection(s.Spec.Params[history.ParamDirection])
		},
		Needs: Needs{Proxy: true},
	})
}

func latencyParams(p map[string]string) (latency, jitter time.Duration, err error) {
	latency, err = time.ParseDuration(p[history.ParamLatency])
	if err != nil || latency < time.Millisecond {
		return 0, 0, fmt.Errorf("params.latency: %q is not a duration of at least 1ms", p[history.ParamLatency])
	}
	if v, ok := p["jitter"]; ok {
		jitter, err = time.ParseDuration(v)
		if err != nil || jitter < 0 || jitter > latency {
			return 0, 0, fmt.Errorf("params.jitter: %q is not a duration between 0 and the latency (%v)", v, latency)
		}
	}
	return latency, jitter, nil
}
