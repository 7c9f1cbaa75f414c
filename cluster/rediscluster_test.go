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
