package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/clustertest"
	"github.com/lockchaos/lockchaos/history"
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

func TestRestartNode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		aof    bool
		params map[string]string
		keep   bool
		down   time.Duration
	}{
		{"empty", false, map[string]string{"mode": "empty"}, false, 0},
		{"aof", true, map[string]string{"mode": "aof"}, true, 0},
		{"delayed", false, map[string]string{"mode": "delayed", "delay": "400ms"}, false, 400 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clustertest.Start(t, cluster.Spec{Topology: cluster.Single, AOF: tc.aof})
			env := testEnv(c.Cluster)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			n := c.Nodes[0]
			admin := c.AdminClient(n)
			for i := range 3 {
				if err := admin.Set(ctx, "k"+strconv.Itoa(i), "v", 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			// While a delayed restart is down, the node must not answer.
			var downSeen error
			probe := make(chan struct{})
			if tc.down > 0 {
				go func() {
					defer close(probe)
					time.Sleep(tc.down / 2)
					downSeen = ping(ctx, n.ServerAddr, 100*time.Millisecond)
				}()
			} else {
				close(probe)
			}
			t0 := time.Now()
			out, err := inject("restart-node", "", tc.params, 0).Start(ctx, env)
			took := time.Since(t0)
			<-probe
			c.Seen()
			mustApply(t, out, err)
			if out.Effect["dbsize_before"] != "3" {
				t.Fatalf("dbsize before %q, want 3", out.Effect["dbsize_before"])
			}
			want := "0"
			if tc.keep {
				want = "3"
			}
			if out.Effect["dbsize_after"] != want {
				t.Fatalf("dbsize after %q, want %s", out.Effect["dbsize_after"], want)
			}
			if got, err := admin.DBSize(ctx).Result(); err != nil || strconv.FormatInt(got, 10) != want {
				t.Fatalf("DBSIZE after restart %d, %v; want %s", got, err, want)
			}
			downMS, _ := strconv.Atoi(out.Effect["down_ms"])
			if tc.down > 0 {
				if downSeen == nil {
					t.Fatal("the node answered PING during its delayed restart")
				}
				if time.Duration(downMS)*time.Millisecond < tc.down || took < tc.down {
					t.Fatalf("down %dms (Start took %v), want at least %v", downMS, took, tc.down)
				}
			}
			t.Logf("restart %s took %v", tc.name, took.Round(time.Millisecond))
		})
	}
}

func TestRestartNodeAOFNeedsAppendonly(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.Single})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pid := c.Nodes[0].Ctl.Pid()
	out, err := inject("restart-node", "", map[string]string{"mode": "aof"}, 0).Start(ctx, testEnv(c.Cluster))
	if err != nil || out.Applied || !strings.Contains(out.Effect["error"], "appendonly") {
		t.Fatalf("outcome %+v, %v; want not applied for lack of appendonly", out, err)
	}
	if c.Nodes[0].Ctl.Pid() != pid {
		t.Fatal("the node was restarted anyway")
	}
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

func TestClockJump(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.Single})
	env := testEnv(c.Cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin := c.AdminClient(c.Nodes[0])
	if err := admin.Set(ctx, "lock", "a", 5*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Set(ctx, "forever", "b", 0).Err(); err != nil {
		t.Fatal(err)
	}
	out, err := inject("clock-jump", "", map[string]string{"delta": "2s"}, 0).Start(ctx, env)
	mustApply(t, out, err)
	if out.Effect["keys_shifted"] != "1" {
		t.Fatalf("keys shifted %q, want 1 (the key without TTL stays)", out.Effect["keys_shifted"])
	}
	pttl, err := admin.PTTL(ctx, "lock").Result()
	if err != nil || pttl < 2900*time.Millisecond || pttl > 3000*time.Millisecond {
		t.Fatalf("PTTL after a 2s jump %v, %v; want just under 3s", pttl, err)
	}
	before, _ := strconv.Atoi(out.Effect["pttl_before_ms"])
	after, _ := strconv.Atoi(out.Effect["pttl_after_ms"])
	if before-after != 2000 {
		t.Fatalf("effect pttl %d → %d, want a 2000ms shift", before, after)
	}
	// A jump past the TTL expires the key (it expires, it is not deleted).
	out, err = inject("clock-jump", "master", map[string]string{"delta": "10s"}, 0).Start(ctx, env)
	mustApply(t, out, err)
	time.Sleep(5 * time.Millisecond)
	if n, err := admin.Exists(ctx, "lock", "forever").Result(); err != nil || n != 1 {
		t.Fatalf("after a 10s jump EXISTS lock forever = %d, %v; want 1 (only forever)", n, err)
	}
}

func TestClockDrift(t *testing.T) {
	testClockDrift(t, cluster.Spec{Topology: cluster.Single}, ttlRewrite)
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

// TestFailoverLosesLaggingWrite is the failover scenario's mechanism: with
// replication lagging, a lock key written just before the master dies is
// not on the replica Sentinel promotes.
func TestFailoverLosesLaggingWrite(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.Sentinel})
	env := testEnv(c.Cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cl := c.NewClient(c.Endpoints()[0], cluster.ClientOptions{Timeout: 300 * time.Millisecond})
	lag := inject("replication-lag", "", map[string]string{"latency": "3s"}, 0)
	out, err := lag.Start(ctx, env)
	mustApply(t, out, err)
	if ok, err := cl.SetNX(ctx, "lock", "client-0", 10*time.Second).Result(); err != nil || !ok {
		t.Fatalf("SET NX on the master: %v %v", ok, err)
	}
	fo := inject("failover", "", nil, 0)
	t0 := time.Now()
	out, err = fo.Start(ctx, env)
	mustApply(t, out, err)
	c.Seen()
	t.Logf("failover took %v", time.Since(t0).Round(time.Millisecond))
	if out.Effect["old_master"] != "n1" || out.Effect["new_master"] == "" || out.Effect["new_master"] == "n1" {
		t.Fatalf("effect %v", out.Effect)
	}
	// The lock key never reached the new master: another client gets it.
	var ok bool
	for ok, err = cl.SetNX(ctx, "lock", "client-1", 10*time.Second).Result(); err != nil && ctx.Err() == nil; {
		time.Sleep(50 * time.Millisecond)
		ok, err = cl.SetNX(ctx, "lock", "client-1", 10*time.Second).Result()
	}
	if err != nil || !ok {
		t.Fatalf("SET NX after the failover: %v %v; want the lock granted again (lost in failover)", ok, err)
	}
	if _, err := lag.Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
	eff, err := fo.Heal(ctx, env)
	c.Seen()
	if err != nil {
		t.Fatalf("heal: %v (%v)", err, eff)
	}
	wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
	defer wcancel()
	if err := c.WaitHealthy(wctx); err != nil {
		t.Fatalf("after heal: %v", err)
	}
	m, _ := c.CurrentMaster(ctx)
	if m == c.Nodes[0] {
		t.Fatal("the old master is master again")
	}
}

// TestClusterFailover is the cluster-failover scenarios' mechanism: with the
// shard's replication lagging, killing the master loses a lock key written
// just before (the promoted replica never got it), and CLUSTER FAILOVER does
// not (the replica catches up before it takes over).
func TestClusterFailover(t *testing.T) {
	const key = "{lock}"
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.RedisCluster, HotKey: key})
	env := testEnv(c.Cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := c.NewClient(c.Endpoints()[0], cluster.ClientOptions{Timeout: 300 * time.Millisecond})
	lag := inject("replication-lag", "", map[string]string{"latency": "3s"}, 0)
	out, err := lag.Start(ctx, env)
	mustApply(t, out, err)
	for i, tc := range []struct {
		mode string
		kept bool
	}{{"kill", false}, {"manual", true}} {
		holder := fmt.Sprint("client-", i)
		// Until the slot map has settled after the previous failover.
		setNX := func(v string) (ok bool, err error) {
			for range 100 {
				if ok, err = cl.SetNX(ctx, key, v, 30*time.Second).Result(); err == nil {
					return ok, nil
				}
				time.Sleep(50 * time.Millisecond)
			}
			return ok, err
		}
		if ok, err := setNX(holder); err != nil || !ok {
			t.Fatalf("%s: SET NX by %s: %v %v", tc.mode, holder, ok, err)
		}
		old, err := c.CurrentMaster(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fo := inject("failover", "", map[string]string{"mode": tc.mode}, 0)
		out, err := fo.Start(ctx, env)
		mustApply(t, out, err)
		c.Seen()
		if out.Effect["old_master"] != old.Name || out.Effect["new_master"] == "" || out.Effect["new_master"] == old.Name {
			t.Fatalf("%s: effect %v (old master %s)", tc.mode, out.Effect, old.Name)
		}
		if got := out.Effect["hot_key_on_new_master"]; got != strconv.FormatBool(tc.kept) {
			t.Errorf("%s: hot_key_on_new_master = %q, want %v", tc.mode, got, tc.kept)
		}
		ok, err := setNX("thief")
		if err != nil || ok == tc.kept {
			t.Errorf("%s: SET NX by another client after the failover: granted %v, %v (want granted %v)", tc.mode, ok, err, !tc.kept)
		}
		if _, err := cl.Del(ctx, key).Result(); err != nil {
			t.Fatal(err)
		}
		if eff, err := fo.Heal(ctx, env); err != nil {
			t.Fatalf("%s: heal: %v (%v)", tc.mode, err, eff)
		}
		c.Seen()
	}
	if _, err := lag.Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
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

func TestFailoverManual(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.Sentinel})
	env := testEnv(c.Cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fo := inject("failover", "", map[string]string{"mode": "manual", "timeout": "10s"}, 0)
	out, err := fo.Start(ctx, env)
	mustApply(t, out, err)
	if out.Effect["old_master"] != "n1" || out.Effect["new_master"] == "n1" || out.Effect["old_pid"] != "" {
		t.Fatalf("effect %v", out.Effect)
	}
	if _, err := fo.Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
	// Sentinel demotes the old master itself; it comes back as a replica.
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Nodes[0].Ctl.Pid() != c.PidOf("n1") {
		t.Fatal("a manual failover restarted the old master")
	}
}

// With Env.KeyPattern a clock jump shifts the run's keys only: another
// key's absolute expiry is unchanged.
func TestClockJumpOnlyRunKeys(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.Single})
	env := testEnv(c.Cluster)
	env.KeyPattern = "run:*"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin := c.AdminClient(c.Nodes[0])
	for _, k := range []string{"run:{k0}", "user:session"} {
		if err := admin.Set(ctx, k, "v", time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	userAt := admin.PExpireTime(ctx, "user:session").Val()
	runAt := admin.PExpireTime(ctx, "run:{k0}").Val()
	out, err := inject("clock-jump", "", map[string]string{"delta": "2s"}, 0).Start(ctx, env)
	mustApply(t, out, err)
	if out.Effect["keys_shifted"] != "1" {
		t.Fatalf("keys shifted %q, want 1", out.Effect["keys_shifted"])
	}
	if at := admin.PExpireTime(ctx, "user:session").Val(); at != userAt {
		t.Errorf("the other key's expiry moved from %v to %v", userAt, at)
	}
	if at := admin.PExpireTime(ctx, "run:{k0}").Val(); runAt-at != 2*time.Second {
		t.Errorf("the run's key moved by %v, want 2s", runAt-at)
	}
}
