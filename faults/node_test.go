package faults

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/clustertest"
	"github.com/lockchaos/lockchaos/history"
	"github.com/redis/go-redis/v9"
)

func testEnv(c *cluster.Cluster) *Env {
	start := time.Now()
	return &Env{Cluster: c, Rand: rand.New(rand.NewPCG(1, 2)), TTL: 500 * time.Millisecond,
		Now: func() int64 { return int64(time.Since(start)) }, Record: func(*history.Event) {}}
}

func inject(kind, target string, params map[string]string, d time.Duration) Injector {
	s := Spec{Kind: kind, Target: target, Params: params, Duration: d}
	if err := Validate(s, 0); err != nil {
		panic(err)
	}
	inj, err := kinds[kind].New(Scheduled{ID: 1, Spec: s, Duration: d})
	if err != nil {
		panic(err)
	}
	return inj
}

func mustApply(t *testing.T, out Outcome, err error) {
	t.Helper()
	if err != nil || !out.Applied {
		t.Fatalf("not applied: %v, effect %v", err, out.Effect)
	}
	t.Logf("effect on %s: %v", out.Target, out.Effect)
}

func ping(ctx context.Context, addr string, timeout time.Duration) error {
	// One dial: go-redis retries a refused dial 5 times by default.
	cl := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: timeout, ReadTimeout: timeout,
		DialerRetries: 1, ContextTimeoutEnabled: true, DisableIdentity: true})
	defer cl.Close()
	return cl.Ping(ctx).Err()
}

func TestNodeFaultsUnsupportedOnEmbedded(t *testing.T) {
	c, err := cluster.Start(context.Background(), cluster.Spec{Topology: cluster.Single, Backend: cluster.Embedded})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	env := testEnv(c)
	for _, tc := range []struct {
		kind   string
		params map[string]string
		want   string
	}{
		{"pause-node", nil, "not supported by backend embedded"},
		{"kill-node", nil, "not supported by backend embedded"},
		{"restart-node", map[string]string{"mode": "empty"}, "not supported by backend embedded"},
		{"replication-lag", map[string]string{"latency": "1s"}, "not supported by backend embedded"},
		{"clock-jump", map[string]string{"delta": "1s"}, "not supported by backend embedded"},
		{"clock-drift", map[string]string{"rate": "2"}, "not supported by backend embedded"},
		{"failover", nil, "sentinel or cluster topology"},
	} {
		out, err := inject(tc.kind, "", tc.params, 0).Start(context.Background(), env)
		if err != nil || out.Applied || !strings.Contains(out.Effect["error"], tc.want) {
			t.Errorf("%s on embedded: %+v, %v; want not applied with %q", tc.kind, out, err, tc.want)
		}
	}
}

// testClockDrift checks that keys expire at the drifted rate, by mechanism
// mech (spec decides which the nodes get).
func testClockDrift(t *testing.T, spec cluster.Spec, mech string) {
	c := clustertest.Start(t, spec)
	env := testEnv(c.Cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin := c.AdminClient(c.Nodes[0])
	for _, tc := range []struct {
		rate     string
		ttl      time.Duration
		min, max time.Duration // when the key must be gone, from its SET
	}{
		{"3", 600 * time.Millisecond, 170 * time.Millisecond, 260 * time.Millisecond},
		{"1.5", 600 * time.Millisecond, 370 * time.Millisecond, 460 * time.Millisecond},
		{"1.005", 300 * time.Millisecond, 290 * time.Millisecond, 340 * time.Millisecond},
	} {
		inj := inject("clock-drift", "", map[string]string{"rate": tc.rate}, 0)
		out, err := inj.Start(ctx, env)
		mustApply(t, out, err)
		if out.Effect["mechanism"] != mech {
			t.Fatalf("mechanism %q, want %q", out.Effect["mechanism"], mech)
		}
		set := time.Now()
		if err := admin.Set(ctx, "lock", "a", tc.ttl).Err(); err != nil {
			t.Fatal(err)
		}
		var gone time.Duration
		for time.Since(set) < 2*tc.ttl {
			if n, err := admin.Exists(ctx, "lock").Result(); err == nil && n == 0 {
				gone = time.Since(set)
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		eff, err := inj.Heal(ctx, env)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("rate %s: a %v key was gone after %v; heal effect %v", tc.rate, tc.ttl, gone.Round(time.Millisecond), eff)
		if gone < tc.min || gone > tc.max {
			t.Errorf("rate %s: key with TTL %v gone after %v, want in [%v, %v]", tc.rate, tc.ttl, gone, tc.min, tc.max)
		}
		if mech == ttlRewrite && (eff["ticks"] == "0" || eff["errors"] != "0") {
			t.Errorf("rate %s: heal effect %v", tc.rate, eff)
		}
		if mech == realClock {
			// The server's TIME ran ahead by what the clock says it gained.
			srv, clk := effectMs(t, eff, "server_offset_ms"), effectMs(t, eff, "clock_offset_ms")
			if clk <= 0 || srv < clk-10 || srv > clk+10 {
				t.Errorf("rate %s: server TIME %vms ahead of the host, clock %vms; want equal ±10ms and > 0", tc.rate, srv, clk)
			}
		}
		_ = admin.Del(ctx, "lock")
	}
}

func masterOffset(t *testing.T, ctx context.Context, n *cluster.Node) int64 {
	return infoInt(t, ctx, n, "master_repl_offset")
}

func replicaOffset(t *testing.T, ctx context.Context, n *cluster.Node) int64 {
	return infoInt(t, ctx, n, "slave_repl_offset")
}

func infoInt(t *testing.T, ctx context.Context, n *cluster.Node, key string) int64 {
	t.Helper()
	cl := redis.NewClient(&redis.Options{Addr: n.ServerAddr, DisableIdentity: true})
	defer cl.Close()
	s, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		t.Fatalf("INFO %s: %v", n.Name, err)
	}
	v, err := strconv.ParseInt(cluster.ParseInfo(s)[key], 10, 64)
	if err != nil {
		t.Fatalf("INFO %s: %s: %v", n.Name, key, err)
	}
	return v
}

// runSchedule fires specs through a Runner for d from now, heals what is
// left and returns the events recorded.
func runSchedule(env *Env, specs []Spec, d time.Duration) []*history.Event {
	var mu sync.Mutex
	var evs []*history.Event
	env.Record = func(e *history.Event) { mu.Lock(); evs = append(evs, e); mu.Unlock() }
	r := NewRunner(env)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	r.Start(ctx, env.Now(), Resolve(specs, 1, time.Second))
	<-ctx.Done()
	r.HealAll(context.Background())
	mu.Lock()
	defer mu.Unlock()
	return evs
}

func TestFaultRunnerRecordsNodeFault(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.Single})
	env := testEnv(c.Cluster)
	evs := runSchedule(env, []Spec{{Kind: "pause-node", At: 50 * time.Millisecond, Duration: 100 * time.Millisecond}}, 400*time.Millisecond)
	if len(evs) != 2 || evs[0].Op != history.OpFault || !evs[0].Fault.Applied || evs[0].Fault.Effect["state_after"] != "T" ||
		evs[0].Node != "n1" || evs[1].Op != history.OpHeal || !evs[1].Fault.Applied {
		for _, e := range evs {
			t.Logf("%+v %+v", e, e.Fault)
		}
		t.Fatal("want an applied pause-node fault on n1 and its heal")
	}
}
