package cluster

import (
	"context"
	"fmt"
	"strconv"
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

func init() {
	topologies[RedisCluster] = func(ctx context.Context, c *Cluster, bin string) error {
		return startRedisCluster(ctx, c, func(ctx context.Context, name string, extra []string, portArgs func(int) []string) (*Node, error) {
			return c.startServer(ctx, bin, name, extra, portArgs)
		})
	}
}

const clusterSlots = 16384

// nodeStarter starts one server named name with extra config args and
// portArgs' args for the port it gets, and appends it to c.Nodes: a
// redis-server process, or a container.
type nodeStarter func(ctx context.Context, name string, extra []string, portArgs func(port int) []string) (*Node, error)

func startRedisCluster(ctx context.Context, c *Cluster, start nodeStarter) error {
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
		px, err := newReplProxy()
		if err != nil {
			return err
		}
		c.onStop(px.close)
		bus, err := newBusProxy()
		if err != nil {
			return err
		}
		c.onStop(bus.close)
		// Each node sends from its own loopback address, so the bus
		// proxies can tell its links from the others' (IsolateNode).
		src := fmt.Sprintf("127.0.0.%d", 10+i)
		ann := append(append([]string{}, extra...), "--cluster-announce-ip", "127.0.0.1", "--cluster-announce-port", px.port(),
			"--cluster-announce-bus-port", bus.port(), "--bind-source-addr", src)
		// The bus listens 10000 above the port (so the port must leave
		// room for it); the node announces its proxy instead.
		n, err := start(ctx, fmt.Sprintf("n%d", i), ann, func(int) []string { return nil })
		if err != nil {
			return err
		}
		px.serve(n.ServerAddr)
		n.ReplAddr, n.repl = px.addr(), px
		n.bus, n.src = bus, src
		if err := bus.serveNode(n); err != nil {
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
	meet := func() error {
		for _, n := range c.Nodes[1:] {
			host, port, _ := strings.Cut(n.ServerAddr, ":")
			if err := first.Do(ctx, "CLUSTER", "MEET", host, port, n.bus.port()).Err(); err != nil {
				return fmt.Errorf("CLUSTER MEET %s %s: %v", n.ServerAddr, n.bus.port(), err)
			}
		}
		return nil
	}
	if err := meet(); err != nil {
		return err
	}
	// Every node must know every other before a replica can name its
	// master. A handshake that did not complete (on a loaded machine the
	// nodes of one cell, both seeds, had not met after 30 s in a CI
	// rehearsal) is started again every 3 s: MEET of a known node is a
	// no-op.
	again := time.Now().Add(3 * time.Second)
	if err := c.waitAll(ctx, func(cl *redis.Client) (bool, error) {
		nodes, err := cl.ClusterNodes(ctx).Result()
		met := strings.Count(strings.TrimSpace(nodes), "\n")+1 == len(c.Nodes)
		if !met && err == nil && time.Now().After(again) {
			again = time.Now().Add(3 * time.Second)
			if merr := meet(); merr != nil {
				return false, merr
			}
		}
		return met, err
	}); err != nil {
		return fmt.Errorf("nodes did not meet: %v", err)
	}
	for i, n := range c.Nodes[shards:] {
		master := i % shards
		if err := c.AdminClient(n).Do(ctx, "CLUSTER", "REPLICATE", ids[master]).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER REPLICATE %s: %v", n.Name, c.Nodes[master].Name, err)
		}
	}
	if err := c.waitAll(ctx, func(cl *redis.Client) (bool, error) {
		info, err := cl.ClusterInfo(ctx).Result()
		return strings.Contains(info, "cluster_state:ok"), err
	}); err != nil {
		return err
	}
	// Ready means replicating too, so that a failover right after the
	// start has a replica with the data to elect.
	for _, n := range c.Nodes[shards:] {
		if err := c.WaitReplicating(ctx, n); err != nil {
			return err
		}
	}
	// ... and every node knows every replica as one, with no node flagged
	// failing: until gossip has spread the REPLICATEs, a node's view of a
	// shard lacks its replica (faults ask the first node that answers).
	replicas := len(c.Nodes) - shards
	return c.waitAll(ctx, func(cl *redis.Client) (bool, error) {
		nodes, err := cl.ClusterNodes(ctx).Result()
		return strings.Count(nodes, "slave") == replicas && !strings.Contains(nodes, "fail"), err
	})
}

// waitAll polls ok on every node until all say true or ctx ends.
func (c *Cluster) waitAll(ctx context.Context, ok func(*redis.Client) (bool, error)) error {
	admins := make([]*redis.Client, len(c.Nodes))
	for i, n := range c.Nodes {
		admins[i] = c.AdminClient(n)
	}
	for {
		all, last := true, error(nil)
		for i, n := range c.Nodes {
			yes, err := ok(admins[i])
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

// ShardMaster is the node that serves key's slot now, as the first node
// that answers CLUSTER SLOTS sees it, or an error.
func (c *Cluster) ShardMaster(ctx context.Context, key string) (*Node, error) {
	m, _, err := c.Shard(ctx, key)
	return m, err
}

// Shard is the master serving key's slot and its replicas, as the first node
// that answers CLUSTER NODES sees them (of the nodes not isolated) (CLUSTER SLOTS omits a replica until
// gossip has told of its replication offset, seconds after it synced).
func (c *Cluster) Shard(ctx context.Context, key string) (master *Node, replicas []*Node, err error) {
	s := KeySlot(key)
	for _, n := range c.Nodes {
		if c.isIsolated(n) {
			continue // a partitioned node's view is the minority's
		}
		text, err := nodesOf(ctx, n.ServerAddr, c.password)
		if err != nil {
			continue
		}
		var masterID string
		type line struct{ id, addr, flags, of string }
		var lines []line
		for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
			f := strings.Fields(l)
			if len(f) < 8 {
				continue
			}
			addr, _, _ := strings.Cut(f[1], "@")
			lines = append(lines, line{f[0], addr, f[2], f[3]})
			for _, r := range f[8:] {
				lo, hi, ok := strings.Cut(r, "-")
				if !ok {
					hi = lo
				}
				a, err1 := strconv.Atoi(lo)
				b, err2 := strconv.Atoi(hi)
				if err1 == nil && err2 == nil && s >= a && s <= b {
					masterID = f[0]
					if master = c.nodeAt(addr); master == nil {
						return nil, nil, fmt.Errorf("slot %d is served by %s, not a node of this cluster", s, addr)
					}
				}
			}
		}
		if master == nil {
			return nil, nil, fmt.Errorf("slot %d is not served", s)
		}
		for _, l := range lines {
			if l.of == masterID && !strings.Contains(l.flags, "fail") {
				if rep := c.nodeAt(l.addr); rep != nil {
					replicas = append(replicas, rep)
				}
			}
		}
		return master, replicas, nil
	}
	return nil, nil, fmt.Errorf("no node answers CLUSTER NODES")
}

// nodesOf asks the server at addr for CLUSTER NODES on a connection of its
// own, so that polling a dead node leaves no client behind.
func nodesOf(ctx context.Context, addr, password string) (string, error) {
	cl := redis.NewClient(&redis.Options{Addr: addr, Password: password, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, ContextTimeoutEnabled: true, PoolSize: 1, DisableIdentity: true})
	defer cl.Close()
	return cl.ClusterNodes(ctx).Result()
}

// ClusterFailover asks a replica of key's shard to take over from its
// master: CLUSTER FAILOVER (the replica first catches up with the master's
// offset while the master holds its clients, so nothing acknowledged is
// lost), or with FORCE / TAKEOVER. It returns the replica asked.
func (c *Cluster) ClusterFailover(ctx context.Context, key, option string) (*Node, error) {
	_, reps, err := c.Shard(ctx, key)
	if err != nil {
		return nil, err
	}
	if len(reps) == 0 {
		return nil, fmt.Errorf("%w: the shard of %s has no replica", ErrUnsupported, key)
	}
	args := []any{"CLUSTER", "FAILOVER"}
	if option != "" {
		args = append(args, option)
	}
	cl := redis.NewClient(&redis.Options{Addr: reps[0].ServerAddr, Password: c.password, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, ContextTimeoutEnabled: true, PoolSize: 1, DisableIdentity: true})
	defer cl.Close()
	if err := cl.Do(ctx, args...).Err(); err != nil {
		return reps[0], fmt.Errorf("%s: %v: %w", reps[0].Name, args, err)
	}
	return reps[0], nil
}

// KeySlot is Redis Cluster's slot of key: CRC16 (XMODEM) of the key, or of
// its hash tag (the part between the first "{" and the next "}", when not
// empty), mod 16384.
func KeySlot(key string) int {
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

// MigrateSlot moves the slot of key from the master that serves it to
// another master (the first in node order), the way `redis-cli --cluster
// reshard` does: SETSLOT IMPORTING on the target, MIGRATING on the source,
// MIGRATE of every key in the slot (each keeps its TTL), then SETSLOT NODE on
// the target, the source and every other master. While it runs the source
// answers ASK for a key it no longer has, and MOVED after.
func (c *Cluster) MigrateSlot(ctx context.Context, key string) (from, to *Node, moved int, err error) {
	if from, _, err = c.Shard(ctx, key); err != nil {
		return nil, nil, 0, err
	}
	ids := map[*Node]string{}
	var masters []*Node
	for _, n := range c.Nodes {
		info, err := replInfo(ctx, n.ServerAddr)
		if err != nil || info["role"] != "master" {
			continue
		}
		cl := c.AdminClient(n)
		id, err := cl.ClusterMyID(ctx).Result()
		_ = cl.Close()
		if err != nil {
			return from, nil, 0, fmt.Errorf("%s: CLUSTER MYID: %w", n.Name, err)
		}
		ids[n] = id
		masters = append(masters, n)
		if to == nil && n != from {
			to = n
		}
	}
	if to == nil {
		return from, nil, 0, fmt.Errorf("%w: no other master to move slot %d to", ErrUnsupported, KeySlot(key))
	}
	slot := KeySlot(key)
	do := func(n *Node, args ...any) error {
		cl := c.AdminClient(n)
		defer cl.Close()
		if err := cl.Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("%s: %v: %w", n.Name, args, err)
		}
		return nil
	}
	if err := do(to, "CLUSTER", "SETSLOT", slot, "IMPORTING", ids[from]); err != nil {
		return from, to, 0, err
	}
	if err := do(from, "CLUSTER", "SETSLOT", slot, "MIGRATING", ids[to]); err != nil {
		return from, to, 0, err
	}
	host, port, _ := strings.Cut(to.ServerAddr, ":")
	src := c.AdminClient(from)
	defer src.Close()
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		if err != nil {
			return from, to, moved, fmt.Errorf("%s: CLUSTER GETKEYSINSLOT %d: %w", from.Name, slot, err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000}
		if c.password != "" {
			args = append(args, "AUTH", c.password)
		}
		args = append(args, "KEYS")
		for _, k := range keys {
			args = append(args, k)
		}
		if err := src.Do(ctx, args...).Err(); err != nil && err != redis.Nil {
			return from, to, moved, fmt.Errorf("%s: MIGRATE to %s: %w", from.Name, to.Name, err)
		}
		moved += len(keys)
	}
	for _, n := range append([]*Node{to, from}, masters...) {
		if err := do(n, "CLUSTER", "SETSLOT", slot, "NODE", ids[to]); err != nil {
			return from, to, moved, err
		}
	}
	return from, to, moved, nil
}
