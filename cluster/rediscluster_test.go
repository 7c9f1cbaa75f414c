package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/clustertest"
)

// A 3 × 1 cluster forms, a cluster client reaches every slot, and killing
// a shard's master promotes its replica, which then serves the slot.
func TestRedisClusterFormsAndFailsOver(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.RedisCluster, NodeTimeout: 500 * time.Millisecond})
	if len(c.Nodes) != 6 || c.Nodes[0].Role != "master" || c.Nodes[5].Role != "replica" {
		t.Fatalf("nodes: %d, roles %s…%s", len(c.Nodes), c.Nodes[0].Role, c.Nodes[5].Role)
	}
	ctx := context.Background()
	cl := c.NewClient(c.Endpoints()[0], cluster.ClientOptions{})
	for i := 0; i < 100; i++ {
		if err := cl.Set(ctx, fmt.Sprintf("k%d", i), i, 0).Err(); err != nil {
			t.Fatalf("SET k%d: %v", i, err)
		}
	}
	old, err := c.ShardMaster(ctx, "k1")
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Ctl.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		m, err := c.ShardMaster(ctx, "k1")
		if err == nil && m != old {
			t.Logf("k1's slot moved from %s to %s", old.Name, m.Name)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("k1's slot still on %s (err %v) 15s after its master was killed", old.Name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		if v, err := cl.Get(ctx, "k1").Int(); err == nil {
			if v != 1 {
				t.Errorf("k1 = %d on the promoted replica, want 1", v)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("k1 not readable through the cluster client after the failover")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// MigrateSlot moves a slot's keys with their TTLs to another master, which
// then serves the slot, and a cluster client follows.
func TestMigrateSlot(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.RedisCluster})
	ctx := context.Background()
	cl := c.NewClient(c.Endpoints()[0], cluster.ClientOptions{})
	for _, k := range []string{"{lock}", "{lock}:fence"} {
		if err := cl.Set(ctx, k, "v", time.Minute).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	from, to, moved, err := c.MigrateSlot(ctx, "{lock}")
	if err != nil {
		t.Fatal(err)
	}
	if to == from || moved != 2 {
		t.Fatalf("moved %d keys from %s to %s; want 2 to another master", moved, from.Name, to.Name)
	}
	if m, err := c.ShardMaster(ctx, "{lock}"); err != nil || m != to {
		t.Fatalf("slot served by %v (%v) after the move; want %s", m, err, to.Name)
	}
	admin := c.AdminClient(to)
	if ttl, err := admin.PTTL(ctx, "{lock}").Result(); err != nil || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("PTTL on the new owner: %v, %v; want the key with its TTL", ttl, err)
	}
	var got string
	for range 40 { // the client's slot map reloads on the MOVED it meets
		if got, err = cl.Get(ctx, "{lock}").Result(); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got != "v" {
		t.Fatalf("GET through the cluster client after the move: %q, %v", got, err)
	}
}

// IsolateNode partitions a shard's master from the rest of the cluster:
// clients still reach it and it accepts writes until it sees it has lost the
// majority (about the node timeout); the majority promotes its replica,
// which never got those writes; after the heal the old master rejoins as a
// replica of the new one and its minority writes are gone.
func TestIsolateNode(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.RedisCluster, HotKey: "{lock}"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old, err := c.ShardMaster(ctx, "{lock}")
	if err != nil {
		t.Fatal(err)
	}
	admin := c.AdminClient(old)
	cut, heal, err := c.IsolateNode(old)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if cut == 0 {
		t.Errorf("isolating %s cut no live link", old.Name)
	}
	if err := admin.Set(ctx, "{lock}", "minority", 0).Err(); err != nil {
		t.Fatalf("SET on the isolated master right after the cut: %v (want it accepted)", err)
	}
	var refused time.Duration
	for time.Since(t0) < 10*time.Second {
		if err := admin.Set(ctx, "{lock}:probe", "1", 0).Err(); err != nil {
			if !strings.Contains(err.Error(), "CLUSTERDOWN") {
				t.Fatalf("the isolated master refused a write with %v, want CLUSTERDOWN", err)
			}
			refused = time.Since(t0)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if refused == 0 {
		t.Fatal("the isolated master still accepted writes 10s after the cut")
	}
	t.Logf("%s accepted writes for %v after the cut (%d links cut)", old.Name, refused.Round(time.Millisecond), cut)
	nm, _, err := c.WaitNewMaster(ctx, old)
	if err != nil {
		t.Fatalf("the majority promoted no new master: %v", err)
	}
	if n, err := c.AdminClient(nm).Exists(ctx, "{lock}").Result(); err != nil || n != 0 {
		t.Fatalf("new master %s has the key written to the minority (exists %d, %v)", nm.Name, n, err)
	}
	heal()
	if err := c.WaitReplicating(ctx, old); err != nil {
		t.Fatalf("%s did not rejoin as a replica after the heal: %v", old.Name, err)
	}
	if m, err := c.ShardMaster(ctx, "{lock}"); err != nil || m != nm {
		t.Fatalf("slot served by %v (%v) after the heal; want %s", m, err, nm.Name)
	}
	// Nothing was written to the new master: the replica's dataset is its
	// copy of it (a replica answers EXISTS with a redirect; DBSIZE is its own).
	err = poll(ctx, func() error {
		n, err := admin.DBSize(ctx).Result()
		if err == nil && n != 0 {
			err = fmt.Errorf("%s still holds %d keys written to the minority", old.Name, n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func poll(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
