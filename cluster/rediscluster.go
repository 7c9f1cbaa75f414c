package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The cluster topology (Redis Cluster) on the process backend: Shards
// masters, each with ShardReplicas replicas, formed the way
// `redis-cli --cluster create` does it (ADDSLOTSRANGE, MEET, REPLICATE),
// ready when every node says cluster_state:ok. Nodes are masters first
// (shard order), then replicas. Replicas fail over on their own after
// NodeTimeout (cluster-replica-validity-factor 0: a lagging replica is
// promoted too, which is how a cluster loses a lock); the cluster keeps
// serving the other shards' slots while one is down
// (cluster-require-full-coverage no).

func init() { topologies[RedisCluster] = startRedisCluster }

const clusterSlots = 16384

func startRedisCluster(ctx context.Context, c *Cluster, bin string) error {
	shards, reps := c.Spec.Shards, c.Spec.ShardReplicas
	if shards == 0 {
		shards = 3
	}
	if reps == 0 {
		reps = 1
	}
	if shards < 1 || shards > 16 || reps < 0 || reps > 4 {
		return fmt.Errorf("%w: cluster topology: %d shards × %d replicas (want 1–16 shards, 0–4 replicas)", ErrBadSpec, shards, reps)
	}
	timeout := c.Spec.NodeTimeout
	if timeout <= 0 {
		timeout = time.Second
	}
	extra := []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", fmt.Sprint(timeout.Milliseconds()),
		"--cluster-replica-validity-factor", "0", "--cluster-require-full-coverage", "no",
		"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"}
	total := shards * (1 + reps)
	for i := 1; i <= total; i++ {
		n, err := c.startServer(ctx, bin, fmt.Sprintf("n%d", i), extra)
		if err != nil {
			return err
		}
		n.Role = "master"
		if i > shards {
			n.Role = "replica"
		}
	}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.formCluster(fctx, shards); err != nil {
		return fmt.Errorf("%w: cluster topology did not form: %v", ErrInfra, err)
	}
	return nil
}

// formCluster assigns the slots, introduces the nodes to each other and
// attaches the replicas, then waits for cluster_state:ok everywhere.
func (c *Cluster) formCluster(ctx context.Context, shards int) error {
	ids := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		id, err := c.AdminClient(n).ClusterMyID(ctx).Result()
		if err != nil {
			return fmt.Errorf("%s: CLUSTER MYID: %v", n.Name, err)
		}
		ids[i] = id
	}
	for i := 0; i < shards; i++ {
		from, to := i*clusterSlots/shards, (i+1)*clusterSlots/shards-1
		if err := c.AdminClient(c.Nodes[i]).Do(ctx, "CLUSTER", "ADDSLOTSRANGE", from, to).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER ADDSLOTSRANGE %d %d: %v", c.Nodes[i].Name, from, to, err)
		}
	}
	first := c.AdminClient(c.Nodes[0])
	for _, n := range c.Nodes[1:] {
		host, port, _ := strings.Cut(n.ServerAddr, ":")
		if err := first.ClusterMeet(ctx, host, port).Err(); err != nil {
			return fmt.Errorf("CLUSTER MEET %s: %v", n.ServerAddr, err)
		}
	}
	// Every node must know every other before a replica can name its
	// master.
	if err := c.waitAll(ctx, func(cl *redis.Client) (bool, error) {
		nodes, err := cl.ClusterNodes(ctx).Result()
		return strings.Count(strings.TrimSpace(nodes), "\n")+1 == len(c.Nodes), err
	}); err != nil {
		return fmt.Errorf("nodes did not meet: %v", err)
	}
	for i, n := range c.Nodes[shards:] {
		master := i % shards
		if err := c.AdminClient(n).Do(ctx, "CLUSTER", "REPLICATE", ids[master]).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER REPLICATE %s: %v", n.Name, c.Nodes[master].Name, err)
		}
	}
	return c.waitAll(ctx, func(cl *redis.Client) (bool, error) {
		info, err := cl.ClusterInfo(ctx).Result()
		return strings.Contains(info, "cluster_state:ok"), err
	})
}

// waitAll polls ok on every node until all say true or ctx ends.
func (c *Cluster) waitAll(ctx context.Context, ok func(*redis.Client) (bool, error)) error {
	for {
		all, last := true, error(nil)
		for _, n := range c.Nodes {
			yes, err := ok(c.AdminClient(n))
			if err != nil {
				last = fmt.Errorf("%s: %v", n.Name, err)
			}
			all = all && yes
		}
		if all {
			return nil
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return last
			}
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ShardMaster is the node that serves key's slot now (CLUSTER SHARDS
// through the first node that answers), or an error.
func (c *Cluster) ShardMaster(ctx context.Context, key string) (*Node, error) {
	for _, n := range c.Nodes {
		slots, err := c.AdminClient(n).ClusterSlots(ctx).Result()
		if err != nil {
			continue
		}
		s := keySlot(key)
		for _, r := range slots {
			if s >= r.Start && s <= r.End && len(r.Nodes) > 0 {
				if m := c.nodeAt(r.Nodes[0].Addr); m != nil {
					return m, nil
				}
				return nil, fmt.Errorf("slot %d is served by %s, not a node of this cluster", s, r.Nodes[0].Addr)
			}
		}
		return nil, fmt.Errorf("slot %d is not served", s)
	}
	return nil, fmt.Errorf("no node answers CLUSTER SLOTS")
}

// keySlot is Redis Cluster's slot of key: CRC16 (XMODEM) of the key, or of
// its hash tag (the part between the first "{" and the next "}", when not
// empty), mod 16384.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % clusterSlots
}
