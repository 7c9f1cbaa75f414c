package faults

import (
	"context"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/clustertest"
)

func TestPauseNode(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.Single})
	env := testEnv(c.Cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := c.Nodes[0]
	inj := inject("pause-node", "", nil, 0)
	out, err := inj.Start(ctx, env)
	mustApply(t, out, err)
	if out.Effect["state_after"] != "T" || cluster.ProcState(n.Ctl.Pid()) != "T" {
		t.Fatalf("state after pause %q (/proc %s), want T", out.Effect["state_after"], cluster.ProcState(n.Ctl.Pid()))
	}
	if err := ping(ctx, n.ServerAddr, 200*time.Millisecond); err == nil {
		t.Fatal("a paused node answered PING")
	}
	eff, err := inj.Heal(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if st := eff[n.Name+".state_after"]; st == "T" || st == "gone" {
		t.Fatalf("state after resume %q", st)
	}
	if err := ping(ctx, n.ServerAddr, time.Second); err != nil {
		t.Fatalf("PING after resume: %v", err)
	}
}
