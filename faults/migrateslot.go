package faults

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// Resharding faults: the cluster topology moves a slot between shards.

func init() {
	Register(Kind{
		Name:    history.FaultMigrateSlot,
		Instant: true,
		Description: "cluster topology: move the slot of the run's first key to another master (SETSLOT IMPORTING/MIGRATING, " +
			"MIGRATE of its keys, SETSLOT NODE), as a resharding does; records the slot, both owners, the keys moved and " +
			"whether the lock key is on the new owner",
		Validate:   onlyMaster("a migration always moves the run's first key's slot"),
		New:        func(s Scheduled) (Injector, error) { return &migrateSlot{s: s}, nil },
		Topologies: []string{cluster.RedisCluster},
	})
}

type migrateSlot struct{ s Scheduled }

func (f *migrateSlot) Start(ctx context.Context, env *Env) (Outcome, error) {
	out := Outcome{Target: "master", Effect: map[string]string{}}
	key := env.Cluster.Spec.HotKey
	if env.Cluster.Spec.Topology != cluster.RedisCluster {
		out.Effect[history.EffectError] = fmt.Sprintf("migrate-slot needs the cluster topology (this is %s)", env.Cluster.Spec.Topology)
		return out, nil
	}
	out.Effect["slot"] = strconv.Itoa(cluster.KeySlot(key))
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	held, _ := existsIn(ctx, env, key)
	t0 := time.Now()
	from, to, moved, err := env.Cluster.MigrateSlot(ctx, key)
	if from != nil {
		out.Target = "node " + from.Name
		out.Effect["from"] = from.Name
	}
	if to != nil {
		out.Effect["to"] = to.Name
	}
	out.Effect["keys_moved"] = strconv.Itoa(moved)
	out.Effect["took_ms"] = strconv.FormatInt(time.Since(t0).Milliseconds(), 10)
	if err != nil {
		out.Effect[history.EffectError] = err.Error()
		return out, nil
	}
	out.Applied = true
	out.Effect["hot_key_before"] = strconv.FormatBool(held)
	if ok, err := existsOn(ctx, env, to, key); err == nil {
		out.Effect["hot_key_on_new_owner"] = strconv.FormatBool(ok)
	}
	return out, nil
}

func (f *migrateSlot) Heal(context.Context, *Env) (map[string]string, error) { return nil, nil }

// existsIn says whether key exists on the master that serves it.
func existsIn(ctx context.Context, env *Env, key string) (bool, error) {
	m, err := env.Cluster.ShardMaster(ctx, key)
	if err != nil {
		return false, err
	}
	return existsOn(ctx, env, m, key)
}
