package checker

import (
	"fmt"

	"github.com/lockchaos/lockchaos/history"
)

// resultFaults: every fault took effect. A fault that did not (no holder to
// pause, a node that would not stop) leaves the scenario untested, so the
// run is unknown, never valid.
func resultFaults(m *model, c *ctx) (CheckResult, bool) {
	sched := scheduledFaults(m.meta[history.MetaFaultsScheduled])
	if len(m.faults) == 0 && len(sched) == 0 {
		return CheckResult{}, false
	}
	res := CheckResult{Verdict: Valid, Stats: map[string]any{}}
	// A scheduled firing with no fault event never happened (the run was
	// cut short, or its record was lost): the run did not test what the
	// scenario asks, so it is unknown, never valid.
	for _, f := range sched {
		id, ok := metaInt(f["id"])
		if !ok || m.faultBy[int(id)] != nil {
			continue
		}
		at, _ := f["at_ms"].(float64)
		res.Notes = append(res.Notes, fmt.Sprintf("fault %d (%v, scheduled at %s) never fired: the history has no record of it", id, f["kind"], sec(int64(at*1e6))))
		res.Verdict = Unknown
	}
	res.Stats["scheduled"] = len(sched)
	applied := 0
	for _, f := range m.faults {
		if f.applied {
			applied++
			continue
		}
		why := f.v.Why
		res.Notes = append(res.Notes, fmt.Sprintf("fault %d (%s on %s) at %s did not take effect: %s", f.id, f.kind, f.target, sec(f.t), why))
		res.Verdict = Unknown
	}
	res.Stats["fired"] = len(m.faults)
	res.Stats["applied"] = applied
	return res, true
}

// scheduledFaults reads the run event's schedule: decoded from JSON it is
// []any of objects; built in memory, []map[string]any.
func scheduledFaults(v any) []map[string]any {
	switch x := v.(type) {
	case []map[string]any:
		return x
	case []any:
		out := make([]map[string]any, 0, len(x))
		for _, e := range x {
			if f, ok := e.(map[string]any); ok {
				out = append(out, f)
			}
		}
		return out
	}
	return nil
}
