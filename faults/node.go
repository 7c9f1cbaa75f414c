package faults

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// What the node-side faults share (pause-node, kill-node, restart-node,
// replication-lag, clock-jump, clock-drift, failover: a file each): they act
// on the Redis servers through the cluster's node primitives (signals,
// restarts, Sentinel, the replication proxies) and through commands or the
// servers' own clocks (clock.go). Each measures what it did; when it did
// not take effect, Outcome.Applied is false and Effect[history.EffectError]
// says why.

func init() {
	masterLookup = replicatedMaster
}

// replicated are the topologies whose masters have replicas.
var replicated = []string{cluster.Sentinel, cluster.RedisCluster}

// validNodeSpec is the Validate of the kinds whose target is nodes.
func validNodeSpec(s Spec) error { return validNodeTarget(s.Target) }

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

func errOrNil(err error) string {
	if err == nil {
		return ""
	}
	return "(" + err.Error() + ")"
}
