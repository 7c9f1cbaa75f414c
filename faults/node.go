package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/history"

	"github.com/lockchaos/lockchaos/cluster"
)

// Node-side faults: they act on the Redis servers through the cluster's node
// primitives (signals, restarts, Sentinel, the replication proxies) and
// through commands or the servers' own clocks (the clock faults, clock.go). Each measures what it did;
// when it did not take effect, Outcome.Applied is false and Effect[history.EffectError]
// says why.

func init() {
	registerNode(history.FaultPauseNode, "freeze the target nodes (SIGSTOP) until healed (SIGCONT); default target master",
		func(s Scheduled) (Injector, error) { return &pauseNode{s: s}, nil })
	registerNode(history.FaultKillNode, "kill the target nodes (SIGKILL); healing restarts them empty; default target master",
		func(s Scheduled) (Injector, error) { return &killNode{s: s}, nil })
	registerNode(history.FaultRestartNode, "kill the target nodes and start them again: params.mode empty (no data), aof (same dir, needs aof: true) "+
		"or delayed (down for params.delay, default 2×TTL, then empty: the delayed-restart mitigation); default target master",
		func(s Scheduled) (Injector, error) {
			mode, delay, err := restartParams(s.Spec.Params)
			return &restartNode{s: s, mode: mode, delay: delay}, err
		})
	registerNode(history.FaultReplicationLag, "sentinel and cluster topologies: the replication stream the target nodes send (default all) arrives "+
		"params.latency late at their replicas, until healed",
		func(s Scheduled) (Injector, error) {
			lat, err := durationParam(s.Spec.Params, history.ParamLatency, true)
			return &replLag{s: s, latency: lat}, err
		})
	registerNode(history.FaultClockJump, "the target nodes' clocks jump by params.delta (positive: forward): the server's own clock (TIME, expiry, "+
		"PXAT) where it has one (process backend), else every key's TTL is shifted by it (at least 1ms is left), as a wall-clock "+
		"jump does to relative TTLs; effect.mechanism says which (real-clock, ttl-rewrite); default target master",
		func(s Scheduled) (Injector, error) {
			delta, err := durationParam(s.Spec.Params, history.ParamDelta, true)
			return &clockJump{s: s, delta: delta}, err
		})
	registerNode(history.FaultClockDrift, "the target nodes' clocks run at params.rate (3 = three times fast, 0.5 = half speed) until healed: "+
		"the server's own clock where it has one (process backend), else every 10ms each key's TTL is shortened by (rate-1)×elapsed; "+
		"effect.mechanism says which (real-clock, ttl-rewrite); default target master",
		func(s Scheduled) (Injector, error) {
			rate, err := rateParam(s.Spec.Params)
			return &clockDrift{s: s, rate: rate}, err
		})
	Register(Kind{
		Name: history.FaultFailover,
		Description: "sentinel and cluster topologies: kill the master (params.mode kill, default) or ask for a failover " +
			"(params.mode manual: SENTINEL FAILOVER, or CLUSTER FAILOVER on a replica of the run's first key's shard; cluster also " +
			"force and takeover: CLUSTER FAILOVER FORCE / TAKEOVER) and wait for a new master (params.timeout, default 15s); " +
			"healing brings the old master back as a replica",
		Validate: onlyMaster("a failover always hits the current master"),
		New: func(s Scheduled) (Injector, error) {
			mode, timeout, err := failoverParams(s.Spec.Params)
			return &failover{s: s, mode: mode, timeout: timeout}, err
		},
		Topologies: replicated,
	})
	// Only sentinel's and cluster's masters have replicas to stream to;
	// the lag is a delaying proxy on the replication links.
	amend(history.FaultReplicationLag, func(k *Kind) { k.Topologies, k.Needs.Proxy = replicated, true })
	// A restart must not kill a node the previous firing is still
	// bringing back (a container restart can outlast the period).
	amend(history.FaultRestartNode, func(k *Kind) { k.Serial = true })
	for _, name := range []string{history.FaultClockJump, history.FaultClockDrift} {
		amend(name, func(k *Kind) { k.Needs.RealClock = true })
	}
	masterLookup = replicatedMaster
}

// replicated are the topologies whose masters have replicas.
var replicated = []string{cluster.Sentinel, cluster.RedisCluster}

// registerNode registers a kind with a node target; inj parses its params.
func registerNode(name, desc string, inj func(Scheduled) (Injector, error)) {
	Register(Kind{Name: name, Description: desc, New: inj, Validate: func(s Spec) error { return validNodeTarget(s.Target) }})
}

// replicatedMaster asks the sentinels (the cluster's slot map) which node is
// master now (of the run's first key's shard).
func replicatedMaster(env *Env) *cluster.Node {
	if !slices.Contains(replicated, env.Cluster.Spec.Topology) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := env.Cluster.CurrentMaster(ctx)
	if err != nil {
		return nil
	}
	return n
}

func durationParam(p map[string]string, name string, required bool) (time.Duration, error) {
	v, ok := p[name]
	if !ok || v == "" {
		if required {
			return 0, fmt.Errorf("params.%s: missing (a duration, e.g. 500ms)", name)
		}
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("params.%s: %q is not a duration", name, v)
	}
	return d, nil
}

// restartParams: mode empty (default), aof or delayed; a delayed restart's
// delay 0 means 2×TTL (restartNode.Start applies it).
func restartParams(p map[string]string) (mode string, delay time.Duration, err error) {
	mode = p[history.ParamMode]
	if mode == "" {
		mode = "empty"
		if p["empty"] == "false" {
			mode = "aof"
		}
	}
	if mode != "empty" && mode != "aof" && mode != "delayed" {
		return "", 0, fmt.Errorf("params.mode: %q is not empty, aof or delayed", mode)
	}
	if delay, err = durationParam(p, history.ParamDelay, false); err != nil {
		return "", 0, err
	}
	if delay < 0 {
		return "", 0, fmt.Errorf("params.delay: %v is negative", delay)
	}
	return mode, delay, nil
}

// failoverModes: force and takeover are Redis Cluster's (CLUSTER FAILOVER
// FORCE / TAKEOVER); Validate refuses them elsewhere.
var failoverModes = []string{"kill", "manual", "force", "takeover"}

func failoverParams(p map[string]string) (mode string, timeout time.Duration, err error) {
	mode = p[history.ParamMode]
	if mode == "" {
		mode = "kill"
	}
	if !slices.Contains(failoverModes, mode) {
		return "", 0, fmt.Errorf("params.mode: %q is not kill, manual, force or takeover", mode)
	}
	if timeout, err = durationParam(p, history.ParamTimeout, false); err != nil {
		return "", 0, err
	}
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	return mode, timeout, nil
}

func rateParam(p map[string]string) (float64, error) {
	v := p[history.ParamRate]
	r, err := strconv.ParseFloat(v, 64)
	if err != nil || r <= 0 || r == 1 {
		return 0, fmt.Errorf("params.rate: %q is not a positive number other than 1 (e.g. 1.5 = 50%% fast)", v)
	}
	return r, nil
}

// nodeScope is the outcome of a fault over some nodes: one node's effects
// are plain keys, several nodes' are "name.key".
type nodeScope struct {
	nodes []*cluster.Node
	out   Outcome
}

// targetNodes resolves the spec's target (def when empty) and refuses
// backends whose nodes lock chaos cannot touch. ok is false when the fault
// cannot proceed; the outcome then says why.
func targetNodes(env *Env, target, def string) (*nodeScope, bool) {
	if target == "" {
		target = def
	}
	sc := &nodeScope{out: Outcome{Target: target, Effect: map[string]string{}}}
	if b := env.Cluster.Backend; b == cluster.Embedded || b == cluster.External {
		sc.out.Effect[history.EffectError] = "not supported by backend " + b
		return sc, false
	}
	nodes, err := nodeTargets(env, target)
	if err != nil {
		sc.out.Effect[history.EffectError] = err.Error()
		return sc, false
	}
	sc.nodes = nodes
	sc.out.Target = "node " + names(nodes)
	if len(nodes) > 1 {
		sc.out.Target = "nodes " + names(nodes)
	}
	return sc, true
}

func (sc *nodeScope) put(n *cluster.Node, k, v string) {
	if len(sc.nodes) > 1 {
		k = n.Name + "." + k
	}
	sc.out.Effect[k] = v
}

// fail records why the fault did not take effect on n.
func (sc *nodeScope) fail(n *cluster.Node, err error) {
	msg := err.Error()
	if len(sc.nodes) > 1 {
		msg = n.Name + ": " + msg
	}
	if prev := sc.out.Effect[history.EffectError]; prev != "" {
		msg = prev + "; " + msg
	}
	sc.out.Effect[history.EffectError] = msg
}

// done sets Applied: every node took effect.
func (sc *nodeScope) done() Outcome {
	sc.out.Applied = sc.out.Effect[history.EffectError] == ""
	return sc.out
}

// waitState polls n's process state until want(state) or d passes (signals
// are delivered asynchronously).
func waitState(n *cluster.Node, d time.Duration, want func(string) bool) string {
	deadline := time.Now().Add(d)
	for {
		s := n.Ctl.State()
		if want(s) || time.Now().After(deadline) {
			return s
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func stopped(s string) bool { return s == "T" || s == "t" || s == "paused" }

type pauseNode struct {
	s     Scheduled
	nodes []*cluster.Node
}

func (f *pauseNode) Start(_ context.Context, env *Env) (Outcome, error) {
	sc, ok := targetNodes(env, f.s.Spec.Target, "master")
	if !ok {
		return sc.out, nil
	}
	for _, n := range sc.nodes {
		before := n.Ctl.State()
		sc.put(n, "pid", strconv.Itoa(n.Ctl.Pid()))
		sc.put(n, "state_before", before)
		if err := n.Ctl.Pause(); err != nil {
			sc.fail(n, fmt.Errorf("pause: %w", err))
			continue
		}
		f.nodes = append(f.nodes, n)
		after := waitState(n, time.Second, stopped)
		sc.put(n, "state_after", after)
		if !stopped(after) {
			sc.fail(n, fmt.Errorf("state %s after SIGSTOP, not stopped", after))
		}
	}
	return sc.done(), nil
}

func (f *pauseNode) Heal(context.Context, *Env) (map[string]string, error) {
	eff := map[string]string{}
	var errs []error
	for _, n := range f.nodes {
		if err := n.Ctl.Resume(); err != nil {
			errs = append(errs, fmt.Errorf("resume %s: %w", n.Name, err))
		}
		eff[n.Name+".state_after"] = waitState(n, time.Second, func(s string) bool { return !stopped(s) })
	}
	return eff, errors.Join(errs...)
}

type killNode struct {
	s     Scheduled
	nodes []*cluster.Node
}

func (f *killNode) Start(_ context.Context, env *Env) (Outcome, error) {
	sc, ok := targetNodes(env, f.s.Spec.Target, "master")
	if !ok {
		return sc.out, nil
	}
	for _, n := range sc.nodes {
		pid := n.Ctl.Pid()
		sc.put(n, "pid", strconv.Itoa(pid))
		if err := n.Ctl.Kill(); err != nil {
			sc.fail(n, fmt.Errorf("kill: %w", err))
			continue
		}
		f.nodes = append(f.nodes, n)
		st := waitState(n, time.Second, func(s string) bool { return s == "gone" })
		sc.put(n, "state_after", st)
		if st != "gone" {
			sc.fail(n, fmt.Errorf("pid %d still %s after SIGKILL", pid, st))
			continue
		}
		sc.put(n, "exit", "killed (SIGKILL)")
	}
	return sc.done(), nil
}

func (f *killNode) Heal(ctx context.Context, env *Env) (map[string]string, error) {
	eff := map[string]string{}
	var errs []error
	for _, n := range f.nodes {
		if err := restartRejoin(ctx, env, n, true); err != nil {
			errs = append(errs, err)
			continue
		}
		eff[n.Name+".pid"] = strconv.Itoa(n.Ctl.Pid())
		eff[n.Name+".restarted"] = "empty"
	}
	return eff, errors.Join(errs...)
}

// restartRejoin starts a killed node again and, under Sentinel, makes it a
// replica of the current master at once when it is no longer the master
// (Sentinel would convert it only after several seconds, in which it is a
// second, empty master).
func restartRejoin(ctx context.Context, env *Env, n *cluster.Node, empty bool) error {
	if err := n.Ctl.Restart(ctx, empty); err != nil {
		return fmt.Errorf("restart %s: %w", n.Name, err)
	}
	if len(env.Cluster.Sentinels) == 0 {
		return nil
	}
	m, err := env.Cluster.CurrentMaster(ctx)
	if err != nil || m == n {
		return nil
	}
	return env.Cluster.ReplicaOf(ctx, n, m)
}

func dbsize(ctx context.Context, env *Env, n *cluster.Node) (int64, error) {
	cl := env.Cluster.AdminClient(n)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return cl.DBSize(ctx).Result()
}

type restartNode struct {
	s     Scheduled
	mode  string
	delay time.Duration
}

// Start kills, waits out the delay (cut short if ctx ends: a node must not
// stay down through the heal phase) and restarts. It returns when the nodes
// answer again.
func (f *restartNode) Start(ctx context.Context, env *Env) (Outcome, error) {
	sc, ok := targetNodes(env, f.s.Spec.Target, "master")
	if !ok {
		return sc.out, nil
	}
	mode, delay := f.mode, f.delay
	if mode == "delayed" && delay == 0 {
		delay = 2 * env.TTL
		if delay == 0 {
			delay = time.Second
		}
	}
	sc.out.Effect["mode"] = mode
	if delay > 0 {
		sc.out.Effect["delay"] = delay.String()
	}
	type down struct {
		n *cluster.Node
		t time.Time
	}
	var downs []down
	for _, n := range sc.nodes {
		size, err := dbsize(ctx, env, n)
		if err != nil {
			sc.fail(n, fmt.Errorf("dbsize before: %w", err))
			continue
		}
		sc.put(n, "dbsize_before", strconv.FormatInt(size, 10))
		if mode == "aof" {
			if on, err := appendonly(ctx, env, n); err != nil || !on {
				sc.fail(n, fmt.Errorf("mode aof: the node runs without appendonly (the scenario needs aof: true) %v", errOrNil(err)))
				continue
			}
		}
		sc.put(n, "pid_before", strconv.Itoa(n.Ctl.Pid()))
		if err := n.Ctl.Kill(); err != nil {
			sc.fail(n, fmt.Errorf("kill: %w", err))
			continue
		}
		downs = append(downs, down{n, time.Now()})
	}
	if len(downs) > 0 && delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			sc.out.Effect["delay_cut_short"] = "run ended"
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	for _, d := range downs {
		err := restartRejoin(rctx, env, d.n, mode != "aof")
		sc.put(d.n, "down_ms", strconv.FormatInt(time.Since(d.t).Milliseconds(), 10))
		if err != nil {
			sc.fail(d.n, err)
			continue
		}
		sc.put(d.n, "pid_after", strconv.Itoa(d.n.Ctl.Pid()))
		size, err := dbsize(rctx, env, d.n)
		if err != nil {
			sc.fail(d.n, fmt.Errorf("dbsize after: %w", err))
			continue
		}
		sc.put(d.n, "dbsize_after", strconv.FormatInt(size, 10))
	}
	return sc.done(), nil
}

func errOrNil(err error) string {
	if err == nil {
		return ""
	}
	return "(" + err.Error() + ")"
}

func appendonly(ctx context.Context, env *Env, n *cluster.Node) (bool, error) {
	cl := env.Cluster.AdminClient(n)
	defer cl.Close()
	v, err := cl.ConfigGet(ctx, "appendonly").Result()
	if err != nil {
		return false, err
	}
	return v["appendonly"] == "yes", nil
}

func (f *restartNode) Heal(context.Context, *Env) (map[string]string, error) { return nil, nil }

type failover struct {
	s       Scheduled
	old     *cluster.Node
	mode    string
	timeout time.Duration
}

func (f *failover) Start(ctx context.Context, env *Env) (Outcome, error) {
	out := Outcome{Target: "master", Effect: map[string]string{}}
	topo := env.Cluster.Spec.Topology
	onCluster := topo == cluster.RedisCluster
	if !slices.Contains(replicated, topo) || (topo == cluster.Sentinel && len(env.Cluster.Sentinels) == 0) {
		out.Effect[history.EffectError] = fmt.Sprintf("failover needs the sentinel or cluster topology (this is %s on backend %s)", topo, env.Cluster.Backend)
		return out, nil
	}
	mode, timeout := f.mode, f.timeout
	out.Effect["mode"] = mode
	if !onCluster && (mode == "force" || mode == "takeover") {
		out.Effect[history.EffectError] = fmt.Sprintf("failover mode %s is CLUSTER FAILOVER %s: it needs the cluster topology", mode, strings.ToUpper(mode))
		return out, nil
	}
	old, err := env.Cluster.CurrentMaster(ctx)
	if err != nil {
		out.Effect[history.EffectError] = "no current master: " + err.Error()
		return out, nil
	}
	out.Target = "node " + old.Name
	out.Effect[history.EffectOldMaster] = old.Name
	if onCluster {
		out.Effect["slot"] = strconv.Itoa(cluster.KeySlot(env.Cluster.Spec.HotKey))
	}
	t0 := time.Now()
	switch mode {
	case "kill":
		out.Effect["old_pid"] = strconv.Itoa(old.Ctl.Pid())
		if err := old.Ctl.Kill(); err != nil {
			out.Effect[history.EffectError] = "kill the master: " + err.Error()
			return out, nil
		}
	case "manual", "force", "takeover":
		var err error
		if onCluster {
			opt := strings.ToUpper(mode)
			if mode == "manual" {
				opt = ""
			}
			var rep *cluster.Node
			rep, err = env.Cluster.ClusterFailover(ctx, env.Cluster.Spec.HotKey, opt)
			if rep != nil {
				out.Effect["asked"] = rep.Name
			}
		} else {
			err = env.Cluster.SentinelFailover(ctx)
		}
		if err != nil {
			out.Effect[history.EffectError] = err.Error()
			return out, nil
		}
	}
	f.old = old
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	waited := time.Since(t0)
	nm, elected, err := env.Cluster.WaitNewMaster(wctx, old)
	if err != nil {
		out.Effect[history.EffectError] = fmt.Sprintf("no new master reachable within %v: %v", timeout, err)
		return out, nil
	}
	out.Applied = true
	out.Effect[history.EffectNewMaster] = nm.Name
	out.Effect["elected_after_ms"] = strconv.FormatInt((waited + elected).Milliseconds(), 10)
	out.Effect["reachable_after_ms"] = strconv.FormatInt(time.Since(t0).Milliseconds(), 10)
	if onCluster {
		// What the new owner of the slot holds of the run's first key: a
		// lock key missing here while its holder still believes it holds is
		// the loss the checker explains.
		if n, err := existsOn(ctx, env, nm, env.Cluster.Spec.HotKey); err == nil {
			out.Effect["hot_key_on_new_master"] = strconv.FormatBool(n)
		}
	}
	return out, nil
}

// existsOn says whether key exists on node n.
func existsOn(ctx context.Context, env *Env, n *cluster.Node, key string) (bool, error) {
	cl := env.Cluster.AdminClient(n)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c, err := cl.Exists(ctx, key).Result()
	return c > 0, err
}

// Heal brings the old master back as a replica of the new one: a killed one
// is restarted empty; one that a manual failover left running is pointed at
// the new master at once (Sentinel would do it only seconds later). It waits
// (bounded) until the old master's link is up.
func (f *failover) Heal(ctx context.Context, env *Env) (map[string]string, error) {
	if f.old == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	eff := map[string]string{history.EffectOldMaster: f.old.Name}
	if f.mode == "kill" {
		if err := restartRejoin(ctx, env, f.old, true); err != nil {
			return eff, err
		}
		eff["restarted"] = "empty"
		eff["pid"] = strconv.Itoa(f.old.Ctl.Pid())
	} else if m, err := env.Cluster.CurrentMaster(ctx); err == nil && m != f.old && env.Cluster.Spec.Topology != cluster.RedisCluster {
		// (A cluster demotes the old master on its own.)
		if err := env.Cluster.ReplicaOf(ctx, f.old, m); err != nil {
			return eff, err
		}
	}
	if err := env.Cluster.WaitReplicating(ctx, f.old); err != nil {
		return eff, fmt.Errorf("old master did not rejoin as a replica: %w", err)
	}
	eff["role"], eff["link"] = "replica", "up"
	return eff, nil
}

type replLag struct {
	s       Scheduled
	latency time.Duration
	nodes   []*cluster.Node
}

// Start delays the streams, then writes (a PUBLISH, which is replicated but
// touches no key) on the master and measures how far each replica's offset
// is behind shortly after.
func (f *replLag) Start(ctx context.Context, env *Env) (Outcome, error) {
	sc, ok := targetNodes(env, f.s.Spec.Target, "all")
	if !ok {
		return sc.out, nil
	}
	lat := f.latency
	sc.out.Effect["latency"] = lat.String()
	for _, n := range sc.nodes {
		if err := env.Cluster.SetReplicationDelay(n, lat); err != nil {
			sc.fail(n, err)
			continue
		}
		f.nodes = append(f.nodes, n)
	}
	if sc.out.Effect[history.EffectError] != "" {
		return sc.done(), nil
	}
	m, err := env.Cluster.CurrentMaster(ctx)
	if err != nil {
		sc.out.Effect[history.EffectError] = "no current master to measure on: " + err.Error()
		return sc.done(), nil
	}
	if err := measureLag(ctx, env, m, lat, sc.out.Effect); err != nil {
		sc.out.Effect[history.EffectError] = err.Error()
	}
	return sc.done(), nil
}

// measureLag writes on m and compares its offset with its replicas': after
// min(latency/2, 200ms) every replica must still be behind. The write is a
// PUBLISH (replicated, touches no key); a cluster does not replicate
// PUBLISH, so there it is a short-lived key beside the run's first key
// (same hash tag, so on m).
func measureLag(ctx context.Context, env *Env, m *cluster.Node, lat time.Duration, eff map[string]string) error {
	mc := env.Cluster.AdminClient(m)
	defer mc.Close()
	replicas := env.Cluster.Nodes
	var probe error
	if env.Cluster.Spec.Topology == cluster.RedisCluster {
		_, reps, err := env.Cluster.Shard(ctx, env.Cluster.Spec.HotKey)
		if err != nil {
			return fmt.Errorf("shard of %s: %w", env.Cluster.Spec.HotKey, err)
		}
		replicas = reps
		probe = mc.Set(ctx, env.Cluster.Spec.HotKey+":lag-probe", "1", time.Second).Err()
	} else {
		probe = mc.Publish(ctx, "lockchaos:replication-probe", "1").Err()
	}
	if probe != nil {
		return fmt.Errorf("probe write on %s: %w", m.Name, probe)
	}
	s, err := mc.Info(ctx, "replication").Result()
	if err != nil {
		return fmt.Errorf("INFO on %s: %w", m.Name, err)
	}
	moff, _ := strconv.ParseInt(cluster.ParseInfo(s)["master_repl_offset"], 10, 64)
	eff["master"] = m.Name
	eff["master_repl_offset"] = strconv.FormatInt(moff, 10)
	wait := min(lat/2, 200*time.Millisecond)
	time.Sleep(wait)
	eff["measured_after_ms"] = strconv.FormatInt(wait.Milliseconds(), 10)
	behind := 0
	for _, n := range replicas {
		if n == m {
			continue
		}
		rc := env.Cluster.AdminClient(n)
		s, err := rc.Info(ctx, "replication").Result()
		_ = rc.Close()
		if err != nil {
			eff[n.Name+".offset"] = "unreachable: " + err.Error()
			continue
		}
		off, _ := strconv.ParseInt(cluster.ParseInfo(s)["slave_repl_offset"], 10, 64)
		eff[n.Name+".offset"] = strconv.FormatInt(off, 10)
		eff[n.Name+".behind_bytes"] = strconv.FormatInt(moff-off, 10)
		if off < moff {
			behind++
		}
	}
	eff["replicas_behind"] = strconv.Itoa(behind)
	if behind == 0 {
		return fmt.Errorf("no replica of %s was behind %v after the write", m.Name, wait)
	}
	return nil
}

func (f *replLag) Heal(_ context.Context, env *Env) (map[string]string, error) {
	var errs []error
	for _, n := range f.nodes {
		errs = append(errs, env.Cluster.SetReplicationDelay(n, 0))
	}
	return map[string]string{"latency": "0s"}, errors.Join(errs...)
}
