package faults

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/clustertest"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// startRealClock starts a single node with a real clock (skipped without gcc:
// no shim).
func startRealClock(t *testing.T) *clustertest.Cluster {
	t.Helper()
	testenv.Need(t, "gcc") // the clock shim
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.Single, RealClock: true})
	if c.Nodes[0].Clock == nil {
		t.Fatalf("no real clock: %s", c.ClockWhy)
	}
	return c
}

func effectMs(t *testing.T, eff map[string]string, k string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(eff[k], 64)
	if err != nil {
		t.Fatalf("effect %s = %q: %v (effect %v)", k, eff[k], err, eff)
	}
	return v
}

// jumpWithLock sets "lock" with a 5s TTL on the first node, then fires a
// +2s clock-jump at it.
func jumpWithLock(t *testing.T, ctx context.Context, c *clustertest.Cluster) (*redis.Client, Outcome) {
	t.Helper()
	admin := c.AdminClient(c.Nodes[0])
	if err := admin.Set(ctx, "lock", "a", 5*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	out, err := inject("clock-jump", "", map[string]string{"delta": "2s"}, 0).Start(ctx, testEnv(c.Cluster))
	mustApply(t, out, err)
	return admin, out
}
