package faults

import (
	"context"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/clustertest"
)

func TestKillNode(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.Independent, Nodes: 2})
	env := testEnv(c.Cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := c.Nodes[1]
	admin := c.AdminClient(n)
	if err := admin.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	inj := inject("kill-node", "node:2", nil, 0)
	out, err := inj.Start(ctx, env)
	mustApply(t, out, err)
	if out.Target != "node n2" || out.Effect["state_after"] != "gone" || out.Effect["pid"] == "" {
		t.Fatalf("outcome %+v", out)
	}
	if err := ping(ctx, n.ServerAddr, 200*time.Millisecond); err == nil {
		t.Fatal("a killed node answered PING")
	}
	if _, err := inj.Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
	c.Seen()
	if got, err := admin.Exists(ctx, "k").Result(); err != nil || got != 0 {
		t.Fatalf("after the empty restart EXISTS k = %d, %v; want 0", got, err)
	}
}
