// Package cluster starts and stops the Redis deployments a run needs (process,
// docker, embedded or external backends; single, sentinel, independent and
// cluster topologies), hands out client connections, observes what the
// servers do, and offers the node-level fault primitives (pause, kill,
// restart). It knows nothing of locks or checking.
package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Backends.
const (
	Auto     = "auto"
	Process  = "process"
	Docker   = "docker"
	Embedded = "embedded"
	External = "external"
)

// Topologies.
const (
	Single       = "single"
	Sentinel     = "sentinel"
	Independent  = "independent"
	RedisCluster = "cluster"
)

// DataNodes is how many data nodes a topology starts (nodes: the
// scenario's count, for independent), 0 when it is not known before the
// topology starts. Scenario validation checks node targets against it.
func DataNodes(topology string, nodes int) int {
	switch topology {
	case "", Single:
		return 1
	case Sentinel:
		return sentinelDataNodes
	case Independent:
		return nodes
	}
	return 0
}

// Spec says what to start.
type Spec struct {
	Topology string // single | sentinel | independent | cluster
	Backend  string // auto | process | docker | embedded | external
	// Nodes is the number of independent masters (independent topology).
	// Default 5.
	Nodes int
	// Shards and ShardReplicas shape the cluster topology: Shards masters
	// (default 3), each with ShardReplicas replicas (default 1).
	Shards, ShardReplicas int
	// NodeTimeout is the cluster topology's cluster-node-timeout: how long
	// a master may be unreachable before its replica takes over (default
	// 1s).
	NodeTimeout time.Duration
	// HotKey is the run's first lock key, in full. In the cluster topology
	// "the master" (CurrentMaster, and the node faults that aim at it) is
	// the master of this key's shard.
	HotKey string
	// RedisServer / RedisSentinel are binary paths; default: looked up on PATH.
	RedisServer   string
	RedisSentinel string
	// Image is the docker image (docker backend).
	Image string
	// Addrs are the user's servers (external backend): host:port or redis://
	// / rediss:// URLs. The password comes from LOCKCHAOS_REDIS_PASSWORD.
	Addrs []string
	// AllowRemote permits non-loopback external addresses.
	AllowRemote bool
	// TLS connects to external host:port addresses over TLS (rediss://
	// addresses always are).
	TLS bool
	// Dir is where node directories and logs go (the run directory).
	Dir string
	// AOF turns on appendonly persistence (appendfsync always) on every node.
	AOF bool
	// Proxy routes every client↔node link through an in-process fault proxy.
	Proxy bool
	// Links gives each of the first Links clients its own fault proxy to
	// every data node (links.go), for faults on one client × node link.
	Links int
	// RealClock gives every redis-server its own wall clock (Node.Clock),
	// which clock faults move: process backend only, through the clock shim
	// (clock.go). Where it is unavailable the nodes have none and
	// Cluster.ClockWhy says why.
	RealClock bool
}

// ErrInfra marks failures of the infrastructure (could not start Redis, ...)
// as opposed to bad input.
var ErrInfra = errors.New("infrastructure failure")

// ErrBadSpec marks a Spec that cannot be satisfied as given.
var ErrBadSpec = errors.New("bad cluster spec")

// Cluster is a started deployment.
type Cluster struct {
	Spec    Spec
	Backend string // resolved backend
	Why     string // why auto chose it
	// image is the docker image the nodes run (docker backend); ImageWhy
	// says how it was chosen when not simply as asked (pulled, or the
	// local fallback because no registry answered).
	image    string
	ImageWhy string
	// Nodes are the data nodes, masters first. For sentinel: the initial
	// master then its replicas. For independent: the N masters.
	Nodes []*Node
	// Sentinels are the sentinel processes (sentinel topology).
	Sentinels  []*Node
	MasterName string
	// ClockWhy says, when Spec.RealClock asked for real server clocks,
	// whether the nodes got them and if not why.
	ClockWhy string

	mu sync.Mutex
	// isolated: nodes IsolateNode cut off from the rest (their view of the
	// cluster is the minority's).
	isolated map[*Node]bool
	clients  []redis.UniversalClient
	stops    []stopStep
	stopped  bool

	// password is the external servers' password (never logged or written).
	password string
	// proxies are the fault proxies by node (Spec.Proxy), see proxy.go.
	proxies map[*Node]*nodeProxy
	// links are the per-client link proxies (Spec.Links), see links.go.
	links map[linkKey]*nodeProxy
	// shim is the built clock shim (Spec.RealClock, process backend), or "".
	shim string
}

// Node is one Redis server (or sentinel).
type Node struct {
	Name string
	// Addr is where clients connect (the proxy's address when proxied).
	Addr string
	// ServerAddr is the server's own address.
	ServerAddr string
	// ProxyAddr is the fault proxy's address in front of the server (set
	// with Spec.Proxy, then equal to Addr), or "".
	ProxyAddr string
	// ReplAddr is the address sentinels, replicas and failover clients know
	// the node by: its replication proxy in the sentinel topology (see
	// replproxy.go), else "".
	ReplAddr string
	// Role is the role the node started with; after a failover ask
	// CurrentMaster.
	Role string // master | replica | sentinel
	Ctl  NodeControl
	// Clock is the server's own wall clock (Spec.RealClock on the process
	// backend), or nil: then its clock is the host's.
	Clock *ServerClock

	repl *replProxy // the proxy at ReplAddr, or nil
	// bus is the proxy in front of a cluster node's bus port, src the
	// loopback address the node sends from (cluster topology), else nil
	// and "".
	bus *busProxy
	src string

	// tls is set for TLS connections (external rediss://).
	tls *tls.Config
}

// NodeControl is the node-level fault primitive set a backend offers.
type NodeControl interface {
	// Pause freezes the server (SIGSTOP / docker pause); Resume undoes it.
	Pause() error
	Resume() error
	// Kill stops the server abruptly (SIGKILL).
	Kill() error
	// Restart starts a killed server again on the same address; empty=true
	// discards its data directory first.
	Restart(ctx context.Context, empty bool) error
	// State describes the process state as the OS sees it: "R", "S", "T"
	// (stopped), "Z", "gone", or the container state.
	State() string
	// Pid is the process id (0 when not a local process).
	Pid() int
}

// ErrUnsupported is returned by a NodeControl that cannot do what was asked
// (an external or embedded node).
var ErrUnsupported = errors.New("not supported by this backend")

// Start brings up the deployment. On error everything already started is
// stopped. Call Stop when done (also after a failed run or a signal).
func Start(ctx context.Context, spec Spec) (*Cluster, error) {
	if spec.Topology == "" {
		spec.Topology = Single
	}
	if spec.Nodes == 0 {
		spec.Nodes = 5
	}
	if spec.Dir != "" {
		// redis-server changes into --dir before it opens --logfile: a
		// relative run directory (the CLI's default runs/...) must be made
		// absolute or the server cannot find its log and exits.
		abs, err := filepath.Abs(spec.Dir)
		if err != nil {
			return nil, fmt.Errorf("%w: run directory %s: %v", ErrBadSpec, spec.Dir, err)
		}
		spec.Dir = abs
	}
	c := &Cluster{Spec: spec}
	backend, why, err := resolveBackend(spec)
	if err != nil {
		return nil, err
	}
	c.Backend, c.Why = backend, why
	switch backend {
	case Process:
		err = startProcess(ctx, c)
	case Embedded:
		err = startEmbedded(ctx, c)
	default:
		starter, ok := backends[backend]
		if !ok {
			return nil, fmt.Errorf("%w: backend %q is not built in (known: auto, process, embedded%s)", ErrBadSpec, backend, extraBackends())
		}
		err = starter(ctx, c)
	}
	if err == nil && spec.Proxy {
		err = c.startProxies()
	}
	if err == nil && spec.Links > 0 {
		err = c.startLinks(spec.Links)
	}
	if err == nil && spec.RealClock && c.ClockWhy == "" {
		c.ClockWhy = "real server clock: not available on the " + backend + " backend; clock faults rewrite TTLs"
	}
	if err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

// backends holds the starters registered by other files (docker, external).
var backends = map[string]func(context.Context, *Cluster) error{}

func extraBackends() string {
	s := ""
	for name := range backends {
		s += ", " + name
	}
	return s
}

// ResolvedBackend is the backend spec's Backend stands for (auto resolved as
// Start would), without starting anything.
func ResolvedBackend(spec Spec) (string, error) {
	b, _, err := resolveBackend(spec)
	return b, err
}

func resolveBackend(spec Spec) (backend, why string, err error) {
	switch spec.Backend {
	case "", Auto:
		if p, lerr := lookRedisServer(spec.RedisServer); lerr == nil {
			return Process, "auto: redis-server found at " + p, nil
		}
		if spec.Topology != Single {
			return "", "", fmt.Errorf("%w: backend auto: topology %s needs redis-server (not found on PATH; install it or pass --redis-server)", ErrInfra, spec.Topology)
		}
		return Embedded, "auto: redis-server not found on PATH, using the in-process embedded Redis (no server-side faults)", nil
	}
	if err := CheckBackend(spec.Backend); err != nil {
		return "", "", err
	}
	return spec.Backend, "", nil
}

// CheckBackend says whether name is a backend, before anything is started.
func CheckBackend(name string) error {
	switch name {
	case "", Auto, Process, Embedded, Docker, External:
		return nil
	}
	return fmt.Errorf("%w: backend %q is not one of auto, process, docker, embedded, external", ErrBadSpec, name)
}

func lookRedisServer(path string) (string, error) {
	if path == "" {
		path = "redis-server"
	}
	return exec.LookPath(path)
}

// onStop registers cleanup, run in reverse order by Stop.
// Image is the docker image the nodes run from ("" off the docker
// backend).
func (c *Cluster) Image() string { return c.image }

func (c *Cluster) onStop(f func() error) {
	c.mu.Lock()
	c.stops = append(c.stops, stopStep{now: f})
	c.mu.Unlock()
}

// onStopBegin registers a stop in two halves: begin, run in Stop's
// reverse order, starts it (a server's SIGTERM) and returns the wait for
// its end, which Stop runs once every step began, beside the other
// waits. A redis-server takes 0.1-0.3 s to act on SIGTERM (its cron runs
// 10 times a second, and a master first waits for its replicas' acks):
// one after the other, a Redis Cluster's six took 1.3 s of every cell's
// stop and a Sentinel topology's nine 2.1 s.
func (c *Cluster) onStopBegin(begin func() (wait func() error)) {
	c.mu.Lock()
	c.stops = append(c.stops, stopStep{begin: begin})
	c.mu.Unlock()
}

// stopStep is one registered clean-up: now runs whole in its turn; begin
// starts it in its turn and returns its wait.
type stopStep struct {
	now   func() error
	begin func() (wait func() error)
}

// Stop closes every client and stops everything started, in reverse order
// (the servers' stops begun in their turn and waited for together at the
// end). It is idempotent and safe to call from a signal handler's
// goroutine.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	clients, stops := c.clients, c.stops
	c.clients, c.stops = nil, nil
	c.mu.Unlock()
	for _, cl := range clients {
		_ = cl.Close()
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	add := func(err error) {
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	for i := len(stops) - 1; i >= 0; i-- {
		if st := stops[i]; st.begin == nil {
			add(st.now())
		} else if wait := st.begin(); wait != nil {
			wg.Add(1)
			go func() { defer wg.Done(); add(wait()) }()
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Endpoint is one place a lock client connects to: a master, or a master
// behind Sentinel.
type Endpoint struct {
	Addr string
	// ClusterAddrs, for the cluster topology, are every node's address: the
	// client is a cluster client that follows the slot map.
	ClusterAddrs  []string
	MasterName    string
	SentinelAddrs []string
	Password      string `json:"-"`
	// TLS, when set, is the client's TLS configuration (external rediss://).
	TLS *tls.Config `json:"-"`
	// link is 1 + the client whose link proxies this endpoint goes
	// through (ClientEndpoints), 0 for the shared ones.
	link int
}

// Endpoints are what lock clients use: the one master for single, the
// sentinel-managed master for sentinel, every master for independent.
func (c *Cluster) Endpoints() []Endpoint {
	switch c.Spec.Topology {
	case Sentinel:
		var sa []string
		for _, s := range c.Sentinels {
			sa = append(sa, s.Addr)
		}
		return []Endpoint{{Addr: c.Nodes[0].clientAddr(), MasterName: c.MasterName, SentinelAddrs: sa, Password: c.password}}
	case RedisCluster:
		addrs := make([]string, len(c.Nodes))
		for i, n := range c.Nodes {
			addrs[i] = n.clientAddr()
		}
		return []Endpoint{{Addr: addrs[0], ClusterAddrs: addrs, Password: c.password}}
	case Independent:
		out := make([]Endpoint, len(c.Nodes))
		for i, n := range c.Nodes {
			out[i] = Endpoint{Addr: n.clientAddr(), Password: c.password, TLS: n.tls}
		}
		return out
	}
	n := c.Nodes[0]
	return []Endpoint{{Addr: n.clientAddr(), Password: c.password, TLS: n.tls}}
}

// clientAddr is where lock clients connect: the proxy when there is one.
func (n *Node) clientAddr() string {
	if n.ProxyAddr != "" {
		return n.ProxyAddr
	}
	return n.Addr
}

// ClientOptions tune a client connection.
type ClientOptions struct {
	// PoolSize per endpoint; default 4.
	PoolSize int
	// Timeout for dial/read/write; default 1s.
	Timeout time.Duration
	// Hooks are installed on the client (client faults, recording).
	Hooks []redis.Hook
	// NoConnCheck skips go-redis's liveness probe of a pooled connection
	// (a non-blocking recv on every checkout, about 8% of a loopback
	// client's throughput). A connection the server closed is then found
	// by the next command failing, so only runs without faults set it.
	NoConnCheck bool
	// Name, when set, names every connection (CLIENT SETNAME): the command
	// record ties each command to its client by it (ConnName).
	Name string
}

// DefaultTimeout bounds a client's dial, read and write when its
// ClientOptions give no Timeout.
const DefaultTimeout = time.Second

// NewClient returns a client for endpoint i. It never retries a command
// (MaxRetries -1: a retried SET NX that had succeeded would look like a
// failure) and honours context deadlines. The cluster closes it on Stop.
func (c *Cluster) NewClient(ep Endpoint, o ClientOptions) redis.UniversalClient {
	if o.PoolSize == 0 {
		o.PoolSize = 4
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	var cl redis.UniversalClient
	if len(ep.ClusterAddrs) > 0 {
		// No redirect is followed (MaxRedirects -1): go-redis's redirect
		// loop also re-sends a command whose connection broke (EOF), which
		// could run a SET NX or a release twice. A MOVED reply (the
		// command did not run) fails the command and reloads the slot map,
		// which is also reloaded every 250ms, so the client finds a
		// promoted replica as fast as an application's client would.
		// The slot map names the nodes' replication proxies: map them to
		// the fault proxies, when there are.
		dialer := clientDialer(c.proxyDialer(), nil, o.Timeout, o.NoConnCheck)
		cl = redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: ep.ClusterAddrs, Password: ep.Password, Dialer: dialer, Protocol: 2, MaxRetries: -1, MaxRedirects: -1,
			ClusterStateReloadInterval: 250 * time.Millisecond,
			DialerRetries:              1, DialTimeout: o.Timeout, ReadTimeout: o.Timeout, WriteTimeout: o.Timeout,
			ContextTimeoutEnabled: true, PoolSize: o.PoolSize, DisableIdentity: true, ClientName: o.Name,
		})
	} else if ep.MasterName != "" {
		// Sentinel announces the servers' own addresses: map them to proxies.
		dialer := c.proxyDialer()
		if ep.link > 0 {
			dialer = c.linkDialer(ep.link - 1)
		}
		dialer = clientDialer(dialer, nil, o.Timeout, o.NoConnCheck)
		cl = redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: ep.MasterName, SentinelAddrs: ep.SentinelAddrs, Password: ep.Password,
			Dialer: dialer, Protocol: 2, MaxRetries: -1, DialerRetries: 1, DialTimeout: o.Timeout, ReadTimeout: o.Timeout, WriteTimeout: o.Timeout,
			ContextTimeoutEnabled: true, PoolSize: o.PoolSize, DisableIdentity: true, ClientName: o.Name,
		})
	} else {
		// A TLS connection is never probed anyway (it hides syscall.Conn).
		dialer := clientDialer(nil, ep.TLS, o.Timeout, o.NoConnCheck)
		cl = redis.NewClient(&redis.Options{
			Addr: ep.Addr, Password: ep.Password, TLSConfig: ep.TLS, Dialer: dialer,
			Protocol: 2, MaxRetries: -1, DialerRetries: 1, DialTimeout: o.Timeout, ReadTimeout: o.Timeout, WriteTimeout: o.Timeout,
			ContextTimeoutEnabled: true, PoolSize: o.PoolSize, DisableIdentity: true, ClientName: o.Name,
		})
	}
	for _, h := range o.Hooks {
		cl.AddHook(h)
	}
	c.mu.Lock()
	c.clients = append(c.clients, cl)
	c.mu.Unlock()
	return cl
}

// AdminClient returns a plain client to one node (for the observer, faults
// and checks), closed on Stop.
func (c *Cluster) AdminClient(n *Node) *redis.Client {
	cl := redis.NewClient(&redis.Options{
		Addr: n.ServerAddr, Password: c.password, TLSConfig: n.tls, MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: time.Second, ContextTimeoutEnabled: true,
		PoolSize: 2, DisableIdentity: true,
	})
	c.mu.Lock()
	c.clients = append(c.clients, cl)
	c.mu.Unlock()
	return cl
}

// ownServer reports whether the server cl reaches is process pid (INFO
// server's process_id).
func ownServer(ctx context.Context, cl *redis.Client, pid int) error {
	info, err := cl.Info(ctx, "server").Result()
	if err != nil {
		return err
	}
	if got := ParseInfo(info)["process_id"]; got != strconv.Itoa(pid) {
		return fmt.Errorf("the port is answered by another server (process_id %s, not %d)", got, pid)
	}
	return nil
}

// waitReady pings addr until it answers or the timeout passes.
//
// pid, when above 0, is the server's process: a PING answered by another
// server (one another run started on the port between freePort and this
// server's bind, while this one is about to exit on EADDRINUSE) is not
// this server's, and the wait goes on until alive reports the exit.
func waitReady(ctx context.Context, addr string, timeout time.Duration, alive func() error, pid int) error {
	cl := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond, DisableIdentity: true})
	defer cl.Close()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if alive != nil {
			if err := alive(); err != nil {
				return err
			}
		}
		// A TCP connect first: go-redis logs every refused dial, which
		// would interleave with a caller's output (go test -bench lines).
		nc, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = nc.Close()
			if last = cl.Ping(ctx).Err(); last == nil {
				if pid <= 0 {
					return nil
				}
				if last = ownServer(ctx, cl, pid); last == nil {
					return nil
				}
			}
		} else {
			last = err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer PING within %v: %v", addr, timeout, last)
}
