package faults

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

func init() {
	Register(Kind{
		Name: history.FaultReplicationLag,
		Description: "sentinel and cluster topologies: the replication stream the target nodes send (default all) arrives " +
			"params.latency late at their replicas, until healed",
		Validate: validNodeSpec,
		New: func(s Scheduled) (Injector, error) {
			lat, err := durationParam(s.Spec.Params, history.ParamLatency, true)
			return &replLag{s: s, latency: lat}, err
		},
		// Only sentinel's and cluster's masters have replicas to stream
		// to; the lag is a delaying proxy on the replication links.
		Topologies: replicated,
		Needs:      Needs{Proxy: true},
	})
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
