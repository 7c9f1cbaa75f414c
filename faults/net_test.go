package faults

import (
	"context"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
)

func netEnv(t *testing.T, proxy bool) *Env {
	t.Helper()
	backend := cluster.Process
	if _, err := exec.LookPath("redis-server"); err != nil {
		backend = cluster.Embedded
	}
	c, err := cluster.Start(context.Background(), cluster.Spec{Backend: backend, Topology: cluster.Independent, Nodes: 3, Proxy: proxy, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	start := time.Now()
	return &Env{Cluster: c, Rand: rand.New(rand.NewPCG(1, 2)), TTL: time.Second,
		Now: func() int64 { return int64(time.Since(start)) }}
}

func fire(t *testing.T, env *Env, s Spec) (Injector, Outcome) {
	t.Helper()
	if err := Validate(s, 0); err != nil {
		t.Fatal(err)
	}
	inj, err := kinds[s.Kind].New(Scheduled{ID: 1, Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	out, err := inj.Start(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	return inj, out
}

func TestNetValidate(t *testing.T) {
	for _, tc := range []struct {
		s    Spec
		want string
	}{
		{Spec{Kind: "partition", Params: map[string]string{"mode": "cut"}}, "params.mode"},
		{Spec{Kind: "partition", Params: map[string]string{"direction": "up"}}, "params.direction"},
		{Spec{Kind: "partition", Target: "client:1"}, "target"},
		{Spec{Kind: "latency"}, "params.latency"},
		{Spec{Kind: "latency", Params: map[string]string{"latency": "10ms", "jitter": "20ms"}}, "params.jitter"},
		{Spec{Kind: "latency", Params: map[string]string{"latency": "10ms", "direction": "x"}}, "params.direction"},
	} {
		err := Validate(tc.s, 0)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.s, err, tc.want)
		}
	}
	for _, s := range []Spec{
		{Kind: "partition"},
		{Kind: "partition", Target: "minority", Params: map[string]string{"mode": "drop", "direction": "from-node"}},
		{Kind: "latency", Target: "node:2", Params: map[string]string{"latency": "50ms", "jitter": "5ms", "direction": "both"}},
	} {
		if err := Validate(s, 0); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
}

func TestNetNeedsProxy(t *testing.T) {
	env := netEnv(t, false)
	_, out := fire(t, env, Spec{Kind: "partition"})
	if out.Applied || !strings.Contains(out.Effect["reason"], "proxy") {
		t.Errorf("partition without proxy: %+v", out)
	}
	_, out = fire(t, env, Spec{Kind: "latency", Params: map[string]string{"latency": "50ms"}})
	if out.Applied || !strings.Contains(out.Effect["reason"], "proxy") {
		t.Errorf("latency without proxy: %+v", out)
	}
}

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
