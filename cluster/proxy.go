package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
)

// The fault proxy is Shopify's toxiproxy used as a library, in-process: one
// toxiproxy.Proxy per data node, listening on a free 127.0.0.1 port and
// forwarding to the server. Faults are toxics added to and removed from its
// toxic chains (no HTTP API is started):
//
//	partition reset  reset_peer toxic: the connection is closed (RST where
//	                 toxiproxy can set linger 0) when data next flows that way
//	partition drop   timeout toxic with timeout 0: data in that direction is
//	                 silently dropped, the connection stays open (blackhole)
//	latency          latency toxic: every chunk waits latency ± jitter
//
// Directions: "to-node" is toxiproxy's upstream stream (client → server),
// "from-node" its downstream stream (server → client), "both" is both.

// nodeProxy is the proxy in front of one node.
type nodeProxy struct {
	p *toxiproxy.Proxy
}

var toxicSeq atomic.Int64

// proxyServer is shared by every proxy of the process: toxiproxy needs an
// ApiServer for its logger and (disabled) metrics; its HTTP API is not started.
var proxyServer = sync.OnceValue(func() *toxiproxy.ApiServer {
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
})

// startProxies puts a proxy in front of every data node and points the
// node's client address at it.
func (c *Cluster) startProxies() error {
	c.mu.Lock()
	if c.proxies == nil {
		c.proxies = map[*Node]*nodeProxy{}
	}
	c.mu.Unlock()
	for _, n := range c.Nodes {
		p := toxiproxy.NewProxy(proxyServer(), "lockchaos-"+n.Name, "127.0.0.1:0", n.ServerAddr)
		if err := p.Start(); err != nil {
			return fmt.Errorf("%w: start proxy for node %s: %v", ErrInfra, n.Name, err)
		}
		c.onStop(func() error { p.Stop(); return nil })
		c.mu.Lock()
		c.proxies[n] = &nodeProxy{p: p}
		c.mu.Unlock()
		n.ProxyAddr = p.Listen
		n.Addr = p.Listen
	}
	return nil
}

func (c *Cluster) proxyOf(n *Node) (*nodeProxy, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n == nil {
		return nil, fmt.Errorf("%w: no node given", ErrBadSpec)
	}
	p := c.proxies[n]
	if p == nil {
		return nil, fmt.Errorf("%w: node %s has no fault proxy (the cluster spec needs proxy: true)", ErrBadSpec, n.Name)
	}
	return p, nil
}

// Proxied reports whether node n's client link runs through a fault proxy.
func (c *Cluster) Proxied(n *Node) bool {
	_, err := c.proxyOf(n)
	return err == nil
}

func streams(direction string) ([]string, error) {
	switch direction {
	case "", "both":
		return []string{"upstream", "downstream"}, nil
	case "to-node":
		return []string{"upstream"}, nil
	case "from-node":
		return []string{"downstream"}, nil
	}
	return nil, fmt.Errorf("%w: direction %q is not both, to-node or from-node", ErrBadSpec, direction)
}

// addToxics adds one toxic of type typ per stream and returns the undo.
func (np *nodeProxy) addToxics(typ string, dirs []string, attrs map[string]int64) (func(), error) {
	var names []string
	undo := func() {
		for _, name := range names {
			_ = np.p.Toxics.RemoveToxic(context.Background(), name)
		}
	}
	for _, dir := range dirs {
		name := fmt.Sprintf("%s_%s_%d", typ, dir, toxicSeq.Add(1))
		body, _ := json.Marshal(map[string]any{"name": name, "type": typ, "stream": dir, "toxicity": 1.0, "attributes": attrs})
		if _, err := np.p.Toxics.AddToxicJson(strings.NewReader(string(body))); err != nil {
			undo()
			return nil, fmt.Errorf("%w: add %s toxic: %v", ErrInfra, typ, err)
		}
		names = append(names, name)
	}
	var once sync.Once
	return func() { once.Do(undo) }, nil
}

// Partition cuts node n off from its clients through its proxy: mode "reset"
// closes connections as soon as data flows in the cut direction (commands
// fail at once), "drop" silently discards that data (commands time out).
// direction is "both", "to-node" (requests lost) or "from-node" (replies
// lost: the server still executes the command). undo heals it; it is
// idempotent. Links to other nodes are untouched.
func (c *Cluster) Partition(n *Node, mode, direction string) (undo func(), err error) {
	np, err := c.proxyOf(n)
	if err != nil {
		return nil, err
	}
	dirs, err := streams(direction)
	if err != nil {
		return nil, err
	}
	switch mode {
	case "", "reset":
		return np.addToxics("reset_peer", dirs, map[string]int64{"timeout": 0})
	case "drop":
		return np.addToxics("timeout", dirs, map[string]int64{"timeout": 0})
	}
	return nil, fmt.Errorf("%w: partition mode %q is not reset or drop", ErrBadSpec, mode)
}

// Latency delays node n's replies (the server → client stream) by latency ±
// jitter (millisecond resolution) until undo is called.
func (c *Cluster) Latency(n *Node, latency, jitter time.Duration) (undo func(), err error) {
	return c.LatencyDir(n, latency, jitter, "from-node")
}

// LatencyDir is Latency on chosen streams ("both" doubles the round trip).
func (c *Cluster) LatencyDir(n *Node, latency, jitter time.Duration, direction string) (undo func(), err error) {
	np, err := c.proxyOf(n)
	if err != nil {
		return nil, err
	}
	if latency < 0 || jitter < 0 || jitter > latency {
		return nil, fmt.Errorf("%w: latency %v, jitter %v: need 0 <= jitter <= latency", ErrBadSpec, latency, jitter)
	}
	dirs, err := streams(direction)
	if err != nil {
		return nil, err
	}
	return np.addToxics(latencyToxic, dirs, map[string]int64{"latency": latency.Milliseconds(), "jitter": jitter.Milliseconds()})
}

// Toxics lists the toxics active on node n's proxy (type/stream), sorted.
func (c *Cluster) Toxics(n *Node) []string {
	np, err := c.proxyOf(n)
	if err != nil {
		return nil
	}
	return toxicNames(np)
}

func toxicNames(np *nodeProxy) []string {
	var out []string
	for _, t := range np.p.Toxics.GetToxicArray() {
		if w, ok := t.(*toxics.ToxicWrapper); ok {
			typ := w.Type
			if typ == latencyToxic {
				typ = "latency" // toxiproxy's, with bounded hand-offs
			}
			out = append(out, typ+"/"+w.Stream)
		}
	}
	sort.Strings(out)
	return out
}

// MeasurePing measures a PING round trip to node n the way lock clients
// reach it (through its proxy when proxied) on a fresh connection: one
// warm-up PING opens the connection, then the median of three. Every step
// is bounded by timeout. The error says whether the link failed fast or
// timed out.
func (c *Cluster) MeasurePing(ctx context.Context, n *Node, timeout time.Duration) (time.Duration, error) {
	cl := redis.NewClient(&redis.Options{
		Addr: n.clientAddr(), Password: c.password, TLSConfig: n.tls, Protocol: 2,
		MaxRetries: -1, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
		ContextTimeoutEnabled: true, PoolSize: 1, DisableIdentity: true,
	})
	defer cl.Close()
	if err := cl.Ping(ctx).Err(); err != nil {
		return 0, err
	}
	rtts := make([]time.Duration, 3)
	for i := range rtts {
		t0 := time.Now()
		if err := cl.Ping(ctx).Err(); err != nil {
			return 0, err
		}
		rtts[i] = time.Since(t0)
	}
	sort.Slice(rtts, func(i, j int) bool { return rtts[i] < rtts[j] })
	return rtts[1], nil
}

// IsTimeout reports whether err is a timeout (as opposed to a fast failure
// such as a reset or refused connection).
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// proxyDialer maps node addresses (server and replication-proxy addresses)
// to their fault proxies, for clients that learn addresses from Redis itself
// (Sentinel's failover client), so their traffic goes through the fault
// proxies too. nil when not proxied.
func (c *Cluster) proxyDialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	c.mu.Lock()
	m := map[string]string{}
	for n := range c.proxies {
		m[n.ServerAddr] = n.ProxyAddr
		if n.ReplAddr != "" { // what Sentinel announces (sentinel.go)
			m[n.ReplAddr] = n.ProxyAddr
		}
	}
	c.mu.Unlock()
	return mapDialer(m)
}

// mapDialer dials the address m maps addr to (addr itself when unmapped);
// nil when m is empty.
func mapDialer(m map[string]string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if len(m) == 0 {
		return nil
	}
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if p, ok := m[addr]; ok {
			addr = p
		}
		return d.DialContext(ctx, network, addr)
	}
}
