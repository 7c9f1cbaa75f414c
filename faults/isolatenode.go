package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// A master on the minority side of a partition: the cluster topology cuts
// the master of the run's first key's shard off from every other node (the
// cluster bus both ways, its replicas' links) while clients still reach it.
// It accepts writes until it sees it has lost the majority (about the node
// timeout); the majority promotes its replica, which never got them.

func init() {
	Register(Kind{
		Name: history.FaultIsolateNode,
		Description: "cluster topology: partition the master of the run's first key's shard from every other node (cluster bus " +
			"both ways and replication) while clients still reach it, until healed; records how long it went on accepting " +
			"writes (minority_writes_ms), the master the majority promoted (waited for up to params.timeout, default 15s) and " +
			"whether the lock key is on it; healing lifts the cut and waits for the old master to rejoin as a replica",
		Validate: onlyMaster("the partition cuts off the master of the run's first key's shard"),
		New: func(s Scheduled) (Injector, error) {
			timeout, err := durationParam(s.Spec.Params, history.ParamTimeout, false)
			if err == nil && timeout < 0 {
				err = fmt.Errorf("params.timeout: %v is negative", timeout)
			}
			if timeout == 0 {
				timeout = 15 * time.Second
			}
			return &isolateNode{s: s, timeout: timeout}, err
		},
		Topologies: []string{cluster.RedisCluster},
	})
}

type isolateNode struct {
	s       Scheduled
	timeout time.Duration
	old     *cluster.Node
	heal    func()
}

func (f *isolateNode) Start(ctx context.Context, env *Env) (Outcome, error) {
	out := Outcome{Target: "master", Effect: map[string]string{}}
	c := env.Cluster
	if c.Spec.Topology != cluster.RedisCluster {
		out.Effect[history.EffectError] = fmt.Sprintf("isolate-node needs the cluster topology (this is %s)", c.Spec.Topology)
		return out, nil
	}
	key := c.Spec.HotKey
	out.Effect["slot"] = strconv.Itoa(cluster.KeySlot(key))
	old, err := c.CurrentMaster(ctx)
	if err != nil {
		out.Effect[history.EffectError] = "no current master: " + err.Error()
		return out, nil
	}
	out.Target = "node " + old.Name
	out.Effect[history.EffectOldMaster] = old.Name
	t0 := time.Now()
	cut, heal, err := c.IsolateNode(old)
	if err != nil {
		out.Effect[history.EffectError] = err.Error()
		return out, nil
	}
	f.old, f.heal = old, heal
	out.Effect["links_cut"] = strconv.Itoa(cut)
	// While the majority elects, probe how long the isolated master goes
	// on accepting writes (a key beside the lock key: same slot).
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	var wg sync.WaitGroup
	var minority time.Duration
	var probeErr string
	wg.Add(1)
	go func() {
		defer wg.Done()
		minority, probeErr = minorityWrites(ctx, env, old, key+":minority-probe", t0)
	}()
	nm, elected, err := c.WaitNewMaster(ctx, old)
	wg.Wait()
	if probeErr != "" {
		out.Effect["minority_probe"] = probeErr
	} else {
		out.Effect["minority_writes_ms"] = strconv.FormatInt(minority.Milliseconds(), 10)
	}
	if err != nil {
		out.Effect[history.EffectError] = fmt.Sprintf("the majority promoted no new master within %v: %v", f.timeout, err)
		return out, nil
	}
	out.Applied = true
	out.Effect[history.EffectNewMaster] = nm.Name
	out.Effect["elected_after_ms"] = strconv.FormatInt(elected.Milliseconds(), 10)
	if n, err := existsOn(ctx, env, nm, key); err == nil {
		out.Effect["hot_key_on_new_master"] = strconv.FormatBool(n)
	}
	return out, nil
}

// minorityWrites writes to the isolated master every 20ms until it refuses
// (CLUSTERDOWN) and returns how long after t0 it last accepted; a probe that
// fails otherwise, or never sees a refusal, says why.
func minorityWrites(ctx context.Context, env *Env, n *cluster.Node, probe string, t0 time.Time) (time.Duration, string) {
	cl := env.Cluster.AdminClient(n)
	defer cl.Close()
	var last time.Duration
	for {
		err := cl.Set(ctx, probe, "1", time.Second).Err()
		switch {
		case err == nil:
			last = time.Since(t0)
		case strings.Contains(err.Error(), "CLUSTERDOWN"):
			return last, ""
		case ctx.Err() != nil:
			return 0, "still accepting writes when the wait ended"
		default:
			return 0, "probe write failed: " + err.Error()
		}
		select {
		case <-ctx.Done():
			return 0, "still accepting writes when the wait ended"
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Heal lifts the cut and waits (bounded) for the old master to rejoin as a
// replica of the new one: the cluster demotes it on its own once it hears
// of the newer configuration, and its minority writes are dropped.
func (f *isolateNode) Heal(ctx context.Context, env *Env) (map[string]string, error) {
	if f.heal == nil {
		return nil, nil
	}
	f.heal()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	t0 := time.Now()
	eff := map[string]string{history.EffectOldMaster: f.old.Name}
	if err := env.Cluster.WaitReplicating(ctx, f.old); err != nil {
		return eff, fmt.Errorf("old master did not rejoin as a replica: %w", err)
	}
	eff["role"], eff["link"] = "replica", "up"
	eff["rejoined_after_ms"] = strconv.FormatInt(time.Since(t0).Milliseconds(), 10)
	return eff, nil
}
