package faults

import (
	"cmp"

	"github.com/lockchaos/lockchaos/history"
)

func init() {
	Register(Kind{
		Name: history.FaultPartition,
		Description: "cut nodes off from the clients through the fault proxy (needs cluster proxy: true): " +
			"params.mode reset (connections reset, commands fail at once) or drop (silent blackhole, commands time out); " +
			"params.direction both, to-node (requests lost) or from-node (replies lost, commands still run)",
		Validate: func(s Spec) error { return validNodeTarget(s.Target) },
		New: func(s Scheduled) (Injector, error) {
			f := &netFault{s: s, kind: history.FaultPartition, dir: cmp.Or(s.Spec.Params[history.ParamDirection], "both")}
			var err error
			if f.mode, err = cutMode(s.Spec.Params); err != nil {
				return nil, err
			}
			return f, validDirection(s.Spec.Params[history.ParamDirection])
		},
		Needs: Needs{Proxy: true},
	})
}
