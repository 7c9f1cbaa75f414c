package faults

import (
	"context"
	"testing"
	"time"
)

func TestNetLatency(t *testing.T) {
	env := netEnv(t, true)
	inj, out := fire(t, env, Spec{Kind: "latency", Target: "node:2", Params: map[string]string{"latency": "50ms"}})
	t.Logf("%+v", out)
	if !out.Applied || out.Target != "node n2" || out.Effect["toxics"] != "n2=latency/downstream" {
		t.Fatalf("%+v", out)
	}
	n2 := env.Cluster.Nodes[1]
	if rtt, err := env.Cluster.MeasurePing(context.Background(), n2, time.Second); err != nil || rtt < 50*time.Millisecond {
		t.Errorf("PING during latency: %v, %v", rtt, err)
	}
	if rtt, err := env.Cluster.MeasurePing(context.Background(), env.Cluster.Nodes[0], time.Second); err != nil || rtt > 40*time.Millisecond {
		t.Errorf("PING to an untouched node: %v, %v", rtt, err)
	}
	eff, err := inj.Heal(context.Background(), env)
	t.Logf("heal %v", eff)
	if err != nil || len(env.Cluster.Toxics(n2)) != 0 {
		t.Fatalf("heal: %v, %v, toxics %v", eff, err, env.Cluster.Toxics(n2))
	}
	if rtt, err := env.Cluster.MeasurePing(context.Background(), n2, time.Second); err != nil || rtt > 40*time.Millisecond {
		t.Errorf("PING after heal: %v, %v", rtt, err)
	}
}
