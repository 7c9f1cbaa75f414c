package faults

import (
	"testing"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

func TestClockDrift(t *testing.T) {
	testClockDrift(t, cluster.Spec{Topology: cluster.Single}, ttlRewrite)
}

// clock-drift on a real clock: keys expire at the drifted rate as under TTL
// rewriting (same bounds), and healing keeps the offset reached.
func TestClockDriftRealClock(t *testing.T) {
	testenv.Need(t, "gcc") // the clock shim
	testClockDrift(t, cluster.Spec{Topology: cluster.Single, RealClock: true}, realClock)
}
