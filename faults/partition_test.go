package faults

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestNetPartition(t *testing.T) {
	env := netEnv(t, true)
	ctx := context.Background()
	for _, mode := range []string{"reset", "drop"} {
		inj, out := fire(t, env, Spec{Kind: "partition", Target: "nodes:1,3", Params: map[string]string{"mode": mode}})
		t.Logf("%s: %+v", mode, out)
		if !out.Applied || out.Target != "node n1,n3" {
			t.Fatalf("%s: %+v", mode, out)
		}
		want := "failed"
		if mode == "drop" {
			want = "timeout"
		}
		if !strings.Contains(out.Effect["ping_after_ms"], "n1="+want) || !strings.Contains(out.Effect["ping_after_ms"], "n3="+want) {
			t.Errorf("%s: ping after %q", mode, out.Effect["ping_after_ms"])
		}
		if _, err := env.Cluster.MeasurePing(ctx, env.Cluster.Nodes[1], time.Second); err != nil {
			t.Errorf("%s: n2 is not partitioned but PING failed: %v", mode, err)
		}
		eff, err := inj.Heal(ctx, env)
		if err != nil || strings.Contains(eff["ping_after_heal_ms"], "fail") || strings.Contains(eff["ping_after_heal_ms"], "timeout") {
			t.Fatalf("%s heal: %v %v", mode, eff, err)
		}
	}
}
