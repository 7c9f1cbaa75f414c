package cluster_test

import (
	"context"
	"fmt"
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
