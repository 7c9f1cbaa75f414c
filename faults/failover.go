package faults

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

func init() {
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
