package faults

import (
	"os/exec"
	"testing"

	"github.com/lockchaos/lockchaos/cluster"
)

func TestClockDrift(t *testing.T) {
	testClockDrift(t, cluster.Spec{Topology: cluster.Single}, ttlRewrite)
}

// clock-drift on a real clock: keys expire at the drifted rate as under TTL
// rewriting (same bounds), and healing keeps the offset reached.
func TestClockDriftRealClock(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not on PATH: no clock shim")
	}
	testClockDrift(t, cluster.Spec{Topology: cluster.Single, RealClock: true}, realClock)
}
