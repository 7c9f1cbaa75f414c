package faults

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/clustertest"
)

func TestClockJump(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.Single})
	env := testEnv(c.Cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin := c.AdminClient(c.Nodes[0])
	if err := admin.Set(ctx, "lock", "a", 5*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Set(ctx, "forever", "b", 0).Err(); err != nil {
		t.Fatal(err)
	}
	out, err := inject("clock-jump", "", map[string]string{"delta": "2s"}, 0).Start(ctx, env)
	mustApply(t, out, err)
	if out.Effect["keys_shifted"] != "1" {
		t.Fatalf("keys shifted %q, want 1 (the key without TTL stays)", out.Effect["keys_shifted"])
	}
	pttl, err := admin.PTTL(ctx, "lock").Result()
	if err != nil || pttl < 2900*time.Millisecond || pttl > 3000*time.Millisecond {
		t.Fatalf("PTTL after a 2s jump %v, %v; want just under 3s", pttl, err)
	}
	before, _ := strconv.Atoi(out.Effect["pttl_before_ms"])
	after, _ := strconv.Atoi(out.Effect["pttl_after_ms"])
	if before-after != 2000 {
		t.Fatalf("effect pttl %d → %d, want a 2000ms shift", before, after)
	}
	// A jump past the TTL expires the key (it expires, it is not deleted).
	out, err = inject("clock-jump", "master", map[string]string{"delta": "10s"}, 0).Start(ctx, env)
	mustApply(t, out, err)
	time.Sleep(5 * time.Millisecond)
	if n, err := admin.Exists(ctx, "lock", "forever").Result(); err != nil || n != 1 {
		t.Fatalf("after a 10s jump EXISTS lock forever = %d, %v; want 1 (only forever)", n, err)
	}
}

// With Env.KeyPattern a clock jump shifts the run's keys only: another
// key's absolute expiry is unchanged.
func TestClockJumpOnlyRunKeys(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.Single})
	env := testEnv(c.Cluster)
	env.KeyPattern = "run:*"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin := c.AdminClient(c.Nodes[0])
	for _, k := range []string{"run:{k0}", "user:session"} {
		if err := admin.Set(ctx, k, "v", time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	userAt := admin.PExpireTime(ctx, "user:session").Val()
	runAt := admin.PExpireTime(ctx, "run:{k0}").Val()
	out, err := inject("clock-jump", "", map[string]string{"delta": "2s"}, 0).Start(ctx, env)
	mustApply(t, out, err)
	if out.Effect["keys_shifted"] != "1" {
		t.Fatalf("keys shifted %q, want 1", out.Effect["keys_shifted"])
	}
	if at := admin.PExpireTime(ctx, "user:session").Val(); at != userAt {
		t.Errorf("the other key's expiry moved from %v to %v", userAt, at)
	}
	if at := admin.PExpireTime(ctx, "run:{k0}").Val(); runAt-at != 2*time.Second {
		t.Errorf("the run's key moved by %v, want 2s", runAt-at)
	}
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
