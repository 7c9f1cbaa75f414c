package faults

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/clustertest"
)

// startRealClock starts a single node with a real clock (skipped without gcc:
// no shim).
func startRealClock(t *testing.T) *clustertest.Cluster {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not on PATH: no clock shim")
	}
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

// On a node with a real clock, clock-jump moves the server's TIME by delta
// (measured and recorded), shortens existing keys' TTLs by it, and a key set
// afterwards expires PX after the server's shifted now.
func TestClockJumpRealClock(t *testing.T) {
	c := startRealClock(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, out := jumpWithLock(t, ctx, c)
	if out.Effect["mechanism"] != realClock {
		t.Fatalf("mechanism %q, want %s", out.Effect["mechanism"], realClock)
	}
	if j := effectMs(t, out.Effect, "measured_jump_ms"); j < 1990 || j > 2010 {
		t.Fatalf("measured jump %vms, want 2000±10", j)
	}
	off, _, err := cluster.MeasureOffset(ctx, admin)
	if err != nil || off < 1990*time.Millisecond || off > 2010*time.Millisecond {
		t.Fatalf("TIME after the jump is %v off the host clock (%v), want 2s±10ms", off, err)
	}
	pttl, err := admin.PTTL(ctx, "lock").Result()
	if err != nil || pttl < 2900*time.Millisecond || pttl > 3000*time.Millisecond {
		t.Fatalf("PTTL after a 2s jump %v, %v; want just under 3s", pttl, err)
	}
	if err := admin.Set(ctx, "after", "b", time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	at, err := admin.PExpireTime(ctx, "after").Result()
	if err != nil {
		t.Fatal(err)
	}
	now, err := admin.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if d := time.UnixMilli(int64(at / time.Millisecond)).Sub(now); d < 980*time.Millisecond || d > time.Second {
		t.Fatalf("a key set with PX 1000 after the jump expires %v after the server's TIME, want just under 1s", d)
	}
}

// With the shim disabled the cluster asked for a real clock cannot have
// one: clock-jump rewrites TTLs, says so and why, and TIME stays the host's.
func TestClockJumpFallback(t *testing.T) {
	t.Setenv(cluster.NoRealClockEnv, "off")
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.Single, RealClock: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, out := jumpWithLock(t, ctx, c)
	if out.Effect["mechanism"] != ttlRewrite || out.Effect["keys_shifted"] != "1" {
		t.Fatalf("effect %v, want mechanism %s with 1 key shifted", out.Effect, ttlRewrite)
	}
	if !strings.Contains(out.Effect["clock_note"], cluster.NoRealClockEnv) {
		t.Fatalf("clock_note %q does not say why there is no real clock", out.Effect["clock_note"])
	}
	if off, _, err := cluster.MeasureOffset(ctx, admin); err != nil || off < -10*time.Millisecond || off > 10*time.Millisecond {
		t.Fatalf("TIME is %v off the host clock (%v) under TTL rewriting, want 0±10ms", off, err)
	}
}

// clock-drift on a real clock: keys expire at the drifted rate as under TTL
// rewriting (same bounds), and healing keeps the offset reached.
func TestClockDriftRealClock(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not on PATH: no clock shim")
	}
	testClockDrift(t, cluster.Spec{Topology: cluster.Single, RealClock: true}, realClock)
}
