package faults

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/history"

	"github.com/lockchaos/lockchaos/cluster"
)

// Run is what a spec is checked against before anything starts: the run's
// phases, its clients and its topology. A fault that cannot take effect in
// it (fires after the run, aims at a client or node that does not exist) is
// refused up front rather than run as a silent no-op.
type Run struct {
	// Duration is the workload phase: every firing must fall in [0,
	// Duration). Recovery follows it; together they are the run.
	Duration, Recovery time.Duration
	// Clients is the workload's client count.
	Clients int
	// Topology and Nodes: the data nodes that exist (cluster.DataNodes); 0
	// when only the started topology knows, and node numbers are not checked.
	Topology string
	Nodes    int
	// AOF: the nodes run with appendonly.
	AOF bool
}

// MaxFirings bounds the firings of one spec: a schedule of millions of
// firings (every: 1ns) is a typo, and would be resolved in memory.
const MaxFirings = 10000

// ValidateRun checks that spec i (already valid on its own, see Validate)
// can take effect in run r; errors name the field and the value.
//
// Timing: every firing falls in the workload phase ([0, Duration)); a fault
// with a duration is healed when the workload phase ends, so its last
// firing's at + duration must not pass Duration, except for kinds whose
// effect cannot be cut short (Kind.Outlasts: a pause), which must end with
// the run (Duration + Recovery).
func ValidateRun(s Spec, i int, r Run) error {
	k := kinds[s.Kind]
	last, err := lastFiring(s, i, r.Duration)
	if err != nil {
		return err
	}
	if s.Duration > 0 {
		end, what := r.Duration, "the end of the workload phase (duration %v), when every fault is healed"
		if k.Outlasts {
			end, what = r.Duration+r.Recovery, "the end of the run (duration %v + recovery "+r.Recovery.String()+")"
		}
		if last+s.Duration > end {
			return fmt.Errorf("faults[%d].duration: %v from the last firing at %v ends at %v, after "+what,
				i, s.Duration, last, last+s.Duration, r.Duration)
		}
	}
	if len(k.Topologies) > 0 && !slices.Contains(k.Topologies, r.Topology) {
		return fmt.Errorf("faults[%d].kind: %q needs topology %s, not %s", i, s.Kind, strings.Join(k.Topologies, " or "), r.Topology)
	}
	if err := targetExists(s.Target, r); err != nil {
		return fmt.Errorf("faults[%d].target: %w", i, err)
	}
	if s.When != "" {
		who, _, _, _ := parseWhen(s.When)
		if err := targetExists(who, r); err != nil {
			return fmt.Errorf("faults[%d].when: %q: %w", i, s.When, err)
		}
	}
	if v := s.Params[history.ParamNodes]; v != "" && r.Nodes > 0 {
		if _, err := nodeIndexes(v, r.Nodes); err != nil {
			return fmt.Errorf("faults[%d].params.nodes: %v (topology %s)", i, err, r.Topology)
		}
	}
	if s.Kind == history.FaultRestartNode && !r.AOF {
		if mode, _, _ := restartParams(s.Params); mode == "aof" {
			return fmt.Errorf("faults[%d].params.mode: %q restarts from the append-only file: the scenario needs aof: true", i, mode)
		}
	}
	return nil
}

// lastFiring checks that every firing of s falls in [0, d) and that there
// are at most MaxFirings, and returns the latest offset a firing can have.
func lastFiring(s Spec, i int, d time.Duration) (time.Duration, error) {
	if s.Count > MaxFirings {
		return 0, fmt.Errorf("faults[%d].count: %d is more than %d firings", i, s.Count, MaxFirings)
	}
	if len(s.Random) == 2 {
		switch {
		case s.At != 0:
			return 0, fmt.Errorf("faults[%d].at: %v has no effect with random (each firing is drawn in random)", i, s.At)
		case s.Every != 0:
			return 0, fmt.Errorf("faults[%d].every: %v has no effect with random (each firing is drawn in random)", i, s.Every)
		case s.Random[1] > d:
			return 0, fmt.Errorf("faults[%d].random: [%v, %v) reaches past the end of the run (duration %v): every firing must fall before it", i, s.Random[0], s.Random[1], d)
		}
		return s.Random[1] - 1, nil
	}
	if s.At >= d {
		return 0, fmt.Errorf("faults[%d].at: %v is at or after the end of the run (duration %v): the fault would never fire", i, s.At, d)
	}
	if s.Every == 0 {
		return s.At, nil // count > 1: all at the same instant
	}
	fit := int64((d-s.At-1)/s.Every) + 1 // firings at at, at+every, ... before d
	if s.Count == 0 {
		if fit > MaxFirings {
			return 0, fmt.Errorf("faults[%d].every: %v from %v fires %d times in the run (duration %v), more than %d", i, s.Every, s.At, fit, d, MaxFirings)
		}
		return s.At + time.Duration(fit-1)*s.Every, nil
	}
	if int64(s.Count) > fit {
		return 0, fmt.Errorf("faults[%d].count: %d firings every %v from %v do not fit in the run (duration %v): only %d do",
			i, s.Count, s.Every, s.At, d, fit)
	}
	return s.At + time.Duration(s.Count-1)*s.Every, nil
}

// targetExists checks that a target (or a when's client) names a client or
// node of run r. Targets chosen at fire time (holder, random-client,
// master, random-node, ...) exist in every run, except replica and minority
// where the topology has none.
func targetExists(t string, r Run) error {
	if c, n, ok := strings.Cut(t, "->"); ok { // a link: both ends must exist
		if err := targetExists(strings.TrimSpace(c), r); err != nil {
			return err
		}
		return targetExists(strings.TrimSpace(n), r)
	}
	switch {
	case strings.HasPrefix(t, "client:"):
		n, _ := strconv.Atoi(strings.TrimPrefix(t, "client:"))
		if n < 0 || n >= r.Clients {
			which := fmt.Sprintf("client:0..client:%d", r.Clients-1)
			if r.Clients == 1 {
				which = "only client:0"
			}
			return fmt.Errorf("%q is not a client of this run (workload.clients: %d, so %s)", t, r.Clients, which)
		}
	case t == "replica" && r.Topology != cluster.Sentinel && r.Topology != "" && r.Nodes > 0:
		return fmt.Errorf("%q: topology %s has no replica (only sentinel has)", t, r.Topology)
	case t == "minority" && r.Nodes > 0 && r.Nodes < 3:
		return fmt.Errorf("%q of %d nodes is no node (topology %s)", t, r.Nodes, r.Topology)
	case (strings.HasPrefix(t, "node:") || strings.HasPrefix(t, "nodes:")) && r.Nodes > 0:
		if _, err := nodeIndexes(strings.SplitN(t, ":", 2)[1], r.Nodes); err != nil {
			return fmt.Errorf("%q: %v (topology %s)", t, err, r.Topology)
		}
	}
	return nil
}
