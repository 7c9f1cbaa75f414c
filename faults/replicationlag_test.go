package faults

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/clustertest"
)

func TestReplicationLag(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.Sentinel})
	env := testEnv(c.Cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	inj := inject("replication-lag", "", map[string]string{"latency": "600ms"}, 0)
	out, err := inj.Start(ctx, env)
	mustApply(t, out, err)
	if out.Effect["replicas_behind"] != "2" {
		t.Fatalf("replicas behind %q, want 2", out.Effect["replicas_behind"])
	}
	lag := func() time.Duration {
		t.Helper()
		set := time.Now()
		if err := c.AdminClient(c.Nodes[0]).Set(ctx, "k"+strconv.FormatInt(set.UnixNano(), 10), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		mo := masterOffset(t, ctx, c.Nodes[0])
		for time.Since(set) < 5*time.Second {
			if replicaOffset(t, ctx, c.Nodes[1]) >= mo {
				return time.Since(set)
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatal("the replica never caught up")
		return 0
	}
	if l := lag(); l < 550*time.Millisecond || l > 1500*time.Millisecond {
		t.Fatalf("replica offset caught up after %v with a 600ms lag", l)
	} else {
		t.Logf("replica caught up after %v with a 600ms lag", l.Round(time.Millisecond))
	}
	if _, err := inj.Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond) // bytes queued before the heal drain
	if l := lag(); l > 200*time.Millisecond {
		t.Fatalf("replica caught up after %v once healed", l)
	}
}
