package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The sentinel topology: n1 starts as master, n2 and n3 as its replicas, and
// s1..s3 are sentinels with quorum 2. Every data node sits behind its own
// replication proxy (replproxy.go) and is known to the sentinels, the
// replicas and failover clients by the proxy's address (Node.ReplAddr).
//
// Sentinel timings are short so a failover fits in a scenario of seconds:
// a master is down after 1s without a reply, and a failover attempt may take
// 3s (a failed election is retried after twice that).
const (
	sentinelMasterName = "lockchaos"
	sentinelDownAfter  = 1000 // ms
	sentinelFailoverTO = 3000 // ms
	// sentinelDataNodes: a master and two replicas.
	sentinelDataNodes = 3
)

func init() { topologies[Sentinel] = startSentinel }

func startSentinel(ctx context.Context, c *Cluster, bin string) error {
	sbin, err := lookSentinel(c.Spec.RedisSentinel, bin)
	if err != nil {
		return err
	}
	return startSentinelTopology(ctx, c,
		func(ctx context.Context, name string, extra []string, _ func(int) []string) (*Node, error) {
			return c.startServer(ctx, bin, name, extra)
		},
		func(ctx context.Context, name, conf string) (*Node, error) {
			return c.startSentinelProc(ctx, sbin, name, conf)
		})
}

// sentinelStarter starts one sentinel named name whose config file holds
// conf, and returns its node (not yet in c.Sentinels).
type sentinelStarter func(ctx context.Context, name, conf string) (*Node, error)

// startSentinelTopology forms the sentinel topology from data nodes and
// sentinels that start (processes or containers) and waits until it settles.
func startSentinelTopology(ctx context.Context, c *Cluster, start nodeStarter, sentinel sentinelStarter) error {
	c.MasterName = sentinelMasterName
	var master *Node
	for i := 1; i <= sentinelDataNodes; i++ {
		px, err := newReplProxy()
		if err != nil {
			return err
		}
		c.onStop(px.close)
		// Replicas announce their proxy, so the master lists them (and
		// sentinels reach them) there; a full sync goes out at once.
		extra := []string{"--replica-announce-ip", "127.0.0.1", "--replica-announce-port", px.port(),
			"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"}
		if master != nil {
			extra = append(extra, "--replicaof", "127.0.0.1", master.repl.port())
		}
		n, err := start(ctx, fmt.Sprintf("n%d", i), extra, nil)
		if err != nil {
			return err
		}
		px.serve(n.ServerAddr)
		n.ReplAddr, n.repl = px.addr(), px
		n.Role = "replica"
		if master == nil {
			n.Role, master = "master", n
		}
	}
	conf := sentinelConf(master)
	for i := 1; i <= 3; i++ {
		s, err := sentinel(ctx, fmt.Sprintf("s%d", i), conf)
		if err != nil {
			return err
		}
		c.Sentinels = append(c.Sentinels, s)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.waitSentinels(wctx, master); err != nil {
		return fmt.Errorf("%w: sentinel topology did not settle: %v", ErrInfra, err)
	}
	return nil
}

// sentinelConf is a sentinel's config file: it monitors master through its
// replication proxy.
func sentinelConf(master *Node) string {
	m := sentinelMasterName
	return strings.Join([]string{
		"sentinel resolve-hostnames no",
		"sentinel monitor " + m + " 127.0.0.1 " + master.repl.port() + " 2",
		"sentinel down-after-milliseconds " + m + " " + strconv.Itoa(sentinelDownAfter),
		"sentinel failover-timeout " + m + " " + strconv.Itoa(sentinelFailoverTO),
		"sentinel parallel-syncs " + m + " 1",
	}, "\n") + "\n"
}

// lookSentinel finds the sentinel binary: the given path, else
// redis-sentinel on PATH, else redis-server itself (run with --sentinel, as
// redis-sentinel is the same program).
func lookSentinel(path, server string) (string, error) {
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("%w: redis-sentinel %q not found: %v", ErrInfra, path, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("redis-sentinel"); err == nil {
		return p, nil
	}
	return server, nil
}

func (c *Cluster) startSentinelProc(ctx context.Context, bin, name, text string) (*Node, error) {
	dir := filepath.Join(c.Spec.Dir, "nodes", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: sentinel dir: %v", ErrInfra, err)
	}
	conf := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return nil, fmt.Errorf("%w: sentinel config: %v", ErrInfra, err)
	}
	log := filepath.Join(c.Spec.Dir, "nodes", name+".log")
	p := &procNode{bin: bin, dir: dir, log: log, conf: conf,
		args: []string{"--bind", "127.0.0.1", "--daemonize", "no", "--dir", dir, "--logfile", log}}
	if err := p.startFresh(ctx); err != nil {
		return nil, fmt.Errorf("%w: start redis-sentinel %s: %v", ErrInfra, name, err)
	}
	c.onStopBegin(p.beginStop)
	return &Node{Name: name, Addr: p.addr(), ServerAddr: p.addr(), Role: "sentinel", Ctl: p}, nil
}

// waitSentinels waits until every sentinel names master, sees both replicas
// up and knows the two other sentinels (without them it cannot win the
// election a failover needs).
func (c *Cluster) waitSentinels(ctx context.Context, master *Node) error {
	return poll(ctx, func() error {
		for _, s := range c.Sentinels {
			if err := c.sentinelSees(ctx, s, master.ReplAddr, len(c.Nodes)-1, len(c.Sentinels)-1); err != nil {
				return err
			}
		}
		return nil
	})
}

func (c *Cluster) sentinelSees(ctx context.Context, s *Node, master string, replicas, peers int) error {
	sc := newSentinelClient(s.ServerAddr)
	defer sc.Close()
	addr, err := sc.GetMasterAddrByName(ctx, c.MasterName).Result()
	if err != nil {
		return fmt.Errorf("sentinel %s: get-master-addr-by-name: %w", s.Name, err)
	}
	if got := strings.Join(addr, ":"); got != master {
		return fmt.Errorf("sentinel %s names master %s, want %s", s.Name, got, master)
	}
	reps, err := sc.Replicas(ctx, c.MasterName).Result()
	if err != nil {
		return fmt.Errorf("sentinel %s: replicas: %w", s.Name, err)
	}
	up := 0
	for _, r := range reps {
		if r["flags"] == "slave" && r["master-link-status"] == "ok" {
			up++
		}
	}
	if up < replicas {
		return fmt.Errorf("sentinel %s sees %d of %d replicas up", s.Name, up, replicas)
	}
	sents, err := sc.Sentinels(ctx, c.MasterName).Result()
	if err != nil {
		return fmt.Errorf("sentinel %s: sentinels: %w", s.Name, err)
	}
	if len(sents) < peers {
		return fmt.Errorf("sentinel %s knows %d of %d other sentinels", s.Name, len(sents), peers)
	}
	return nil
}

func newSentinelClient(addr string) *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: 500 * time.Millisecond,
		ReadTimeout: time.Second, WriteTimeout: time.Second, ContextTimeoutEnabled: true, PoolSize: 1, DisableIdentity: true})
}

// poll runs check every 20ms until it returns nil or ctx ends, then returns
// ctx's error with check's last error.
func poll(ctx context.Context, check func() error) error {
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %v", ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ErrNoMaster is returned by CurrentMaster when no sentinel names a master
// that is one of the cluster's nodes.
var ErrNoMaster = errors.New("no master known")

// CurrentMaster returns the node that is master now: for the sentinel
// topology the one the first answering sentinel names (it may be down, if
// the sentinels have not noticed yet); for the cluster topology the master
// of Spec.HotKey's shard; else the first node that started as master.
func (c *Cluster) CurrentMaster(ctx context.Context) (*Node, error) {
	if c.Spec.Topology == RedisCluster {
		m, err := c.ShardMaster(ctx, c.Spec.HotKey)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoMaster, err)
		}
		return m, nil
	}
	if len(c.Sentinels) == 0 {
		for _, n := range c.Nodes {
			if n.Role == "master" {
				return n, nil
			}
		}
		if len(c.Nodes) == 0 {
			return nil, ErrNoMaster
		}
		return c.Nodes[0], nil
	}
	var errs []error
	for _, s := range c.Sentinels {
		sc := newSentinelClient(s.ServerAddr)
		addr, err := sc.GetMasterAddrByName(ctx, c.MasterName).Result()
		_ = sc.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("sentinel %s: %w", s.Name, err))
			continue
		}
		a := strings.Join(addr, ":")
		if n := c.nodeAt(a); n != nil {
			return n, nil
		}
		errs = append(errs, fmt.Errorf("sentinel %s names %s, which is no node of the cluster", s.Name, a))
	}
	return nil, fmt.Errorf("%w: %w", ErrNoMaster, errors.Join(errs...))
}

// nodeAt maps an address Redis reports (a replication proxy, the server or
// its client address) to the node.
func (c *Cluster) nodeAt(addr string) *Node {
	for _, n := range c.Nodes {
		if addr == n.ReplAddr || addr == n.ServerAddr || addr == n.Addr {
			return n
		}
	}
	return nil
}

// WaitHealthy waits until every node and sentinel answers PING and, for the
// sentinel topology, a master is known, answers as master, and every other
// data node replicates from it with its link up. It returns ctx's error with
// the last thing that was not healthy.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	return poll(ctx, func() error {
		for _, n := range append(append([]*Node{}, c.Nodes...), c.Sentinels...) {
			if err := pingOnce(ctx, n.ServerAddr); err != nil {
				return fmt.Errorf("node %s: %w", n.Name, err)
			}
		}
		if len(c.Sentinels) == 0 {
			return nil
		}
		m, err := c.CurrentMaster(ctx)
		if err != nil {
			return err
		}
		info, err := replInfo(ctx, m.ServerAddr)
		if err != nil {
			return fmt.Errorf("master %s: %w", m.Name, err)
		}
		if info["role"] != "master" {
			return fmt.Errorf("node %s is named master but has role %s", m.Name, info["role"])
		}
		for _, n := range c.Nodes {
			if n == m {
				continue
			}
			info, err := replInfo(ctx, n.ServerAddr)
			if err != nil {
				return fmt.Errorf("replica %s: %w", n.Name, err)
			}
			from := info["master_host"] + ":" + info["master_port"]
			if info["role"] != "slave" || c.nodeAt(from) != m || info["master_link_status"] != "up" {
				return fmt.Errorf("node %s: role %s, replicating from %s (want %s), link %s", n.Name, info["role"], from, m.Name, info["master_link_status"])
			}
		}
		return nil
	})
}

func pingOnce(ctx context.Context, addr string) error {
	cl := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: 500 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, ContextTimeoutEnabled: true, PoolSize: 1, DisableIdentity: true})
	defer cl.Close()
	return cl.Ping(ctx).Err()
}

// replInfo returns INFO replication of the server at addr as key → value.
func replInfo(ctx context.Context, addr string) (map[string]string, error) {
	cl := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: 500 * time.Millisecond,
		ReadTimeout: time.Second, ContextTimeoutEnabled: true, PoolSize: 1, DisableIdentity: true})
	defer cl.Close()
	s, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return nil, err
	}
	return ParseInfo(s), nil
}

// ParseInfo splits an INFO reply into key → value.
func ParseInfo(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m
}

// SetReplicationDelay delays the replication stream node n sends to its
// replicas by d (0 undoes it); it applies to bytes the node sends from now
// on. ErrUnsupported when n has no replication proxy (topologies other than
// sentinel and cluster).
func (c *Cluster) SetReplicationDelay(n *Node, d time.Duration) error {
	if n == nil || n.repl == nil {
		return fmt.Errorf("%w: replication delay needs the replication proxies of the sentinel or cluster topology", ErrUnsupported)
	}
	n.repl.setDelay(d)
	return nil
}

// ReplicaOf makes node n replicate from master (REPLICAOF at master's
// replication address), e.g. for a restarted old master to rejoin without
// waiting for Sentinel to convert it.
func (c *Cluster) ReplicaOf(ctx context.Context, n, master *Node) error {
	addr := master.ReplAddr
	if addr == "" {
		addr = master.ServerAddr
	}
	host, port, _ := strings.Cut(addr, ":")
	cl := redis.NewClient(&redis.Options{Addr: n.ServerAddr, MaxRetries: -1, DialerRetries: 1, DialTimeout: 500 * time.Millisecond,
		ReadTimeout: time.Second, ContextTimeoutEnabled: true, PoolSize: 1, DisableIdentity: true})
	defer cl.Close()
	if err := cl.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		return fmt.Errorf("node %s: REPLICAOF %s: %w", n.Name, addr, err)
	}
	return nil
}

// WaitNewMaster waits until the sentinels (for the cluster topology, the
// slot map of Spec.HotKey) name a master other than old and that node
// answers with role master. elected is how long after the call the
// sentinels named it.
func (c *Cluster) WaitNewMaster(ctx context.Context, old *Node) (n *Node, elected time.Duration, err error) {
	t0 := time.Now()
	err = poll(ctx, func() error {
		if n == nil {
			m, err := c.CurrentMaster(ctx)
			if err != nil {
				return err
			}
			if m == old {
				return fmt.Errorf("%s is still named master", old.Name)
			}
			n, elected = m, time.Since(t0)
		}
		info, err := replInfo(ctx, n.ServerAddr)
		if err != nil {
			return fmt.Errorf("new master %s: %w", n.Name, err)
		}
		if info["role"] != "master" {
			return fmt.Errorf("%s is named master but has role %s", n.Name, info["role"])
		}
		return nil
	})
	return n, elected, err
}

// WaitReplicating waits until n is a replica with its link to its master up.
func (c *Cluster) WaitReplicating(ctx context.Context, n *Node) error {
	return poll(ctx, func() error {
		info, err := replInfo(ctx, n.ServerAddr)
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		if info["role"] != "slave" || info["master_link_status"] != "up" {
			return fmt.Errorf("%s: role %s, link %s", n.Name, info["role"], info["master_link_status"])
		}
		return nil
	})
}

// SentinelFailover asks the sentinels (the first that accepts) to fail the
// master over now, without waiting for it to be down.
func (c *Cluster) SentinelFailover(ctx context.Context) error {
	if len(c.Sentinels) == 0 {
		return fmt.Errorf("%w: SENTINEL FAILOVER needs the sentinel topology", ErrUnsupported)
	}
	var errs []error
	for _, s := range c.Sentinels {
		sc := newSentinelClient(s.ServerAddr)
		err := sc.Failover(ctx, c.MasterName).Err()
		_ = sc.Close()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("sentinel %s: SENTINEL FAILOVER: %w", s.Name, err))
	}
	return errors.Join(errs...)
}
