package faults

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

func netEnv(t *testing.T, proxy bool) *Env {
	t.Helper()
	backend := cluster.Process
	if !testenv.Has(t, "redis-server") {
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
