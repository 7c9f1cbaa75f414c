package cluster

import (
	"context"
	"fmt"
	"net"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/redis/go-redis/v9"
)

// Per-link fault proxies. The node proxies (proxy.go) sit in front of a
// node and delay or cut every client alike. A link proxy sits between one
// client and one node (Spec.Links: one per client × data node), so a fault
// can hit that pair only: the client's command leaves on time, its bytes
// wait in the proxy, and they reach the server late while other clients'
// commands to the same node pass at once. This is the fault that lets a
// holder's renewal arrive after its key expired and another client took
// it. Jepsen partitions node pairs; a lock's safety hinges on client × node
// pairs.

// linkKey names one client × node link.
type linkKey struct {
	client int
	node   *Node
}

// startLinks starts a toxiproxy proxy per client × data node.
func (c *Cluster) startLinks(clients int) error {
	c.mu.Lock()
	if c.links == nil {
		c.links = map[linkKey]*nodeProxy{}
	}
	c.mu.Unlock()
	for _, n := range c.Nodes {
		for i := 0; i < clients; i++ {
			p := toxiproxy.NewProxy(proxyServer(), fmt.Sprintf("lockchaos-%s-client%d", n.Name, i), "127.0.0.1:0", n.ServerAddr)
			if err := p.Start(); err != nil {
				return fmt.Errorf("%w: start link proxy client %d → node %s: %v", ErrInfra, i, n.Name, err)
			}
			c.onStop(func() error { p.Stop(); return nil })
			c.mu.Lock()
			c.links[linkKey{i, n}] = &nodeProxy{p: p}
			c.mu.Unlock()
		}
	}
	return nil
}

func (c *Cluster) linkOf(client int, n *Node) (*nodeProxy, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n == nil {
		return nil, fmt.Errorf("%w: no node given", ErrBadSpec)
	}
	p := c.links[linkKey{client, n}]
	if p == nil {
		return nil, fmt.Errorf("%w: client %d has no link proxy to node %s (the cluster spec has links for %d clients)", ErrBadSpec, client, n.Name, c.Spec.Links)
	}
	return p, nil
}

// ClientEndpoints are Endpoints for one client: through its own link
// proxies when the cluster has them (Spec.Links > client), else the shared
// ones.
func (c *Cluster) ClientEndpoints(client int) []Endpoint {
	eps := c.Endpoints()
	if client < 0 || client >= c.Spec.Links {
		return eps
	}
	for i := range eps {
		eps[i].link = client + 1
		if eps[i].MasterName != "" {
			if p, err := c.linkOf(client, c.Nodes[0]); err == nil {
				eps[i].Addr = p.p.Listen
			}
			continue
		}
		node := c.Nodes[0]
		if c.Spec.Topology == Independent {
			node = c.Nodes[i]
		}
		if p, err := c.linkOf(client, node); err == nil {
			eps[i].Addr = p.p.Listen
		}
	}
	return eps
}

// LinkFault applies a fault to the link between one client and node n
// until undo is called (idempotent):
//
//	delay   every chunk in the chosen direction waits d (the command was
//	        written on time; the server reads it d later)
//	drop    data in that direction is silently discarded; the connection
//	        stays open
//	reset   the connection is closed as soon as data flows that way
//
// direction is "both", "to-node" or "from-node". Other clients' links to n,
// and this client's links to other nodes, are untouched.
func (c *Cluster) LinkFault(client int, n *Node, mode, direction string, d time.Duration) (undo func(), err error) {
	np, err := c.linkOf(client, n)
	if err != nil {
		return nil, err
	}
	dirs, err := streams(direction)
	if err != nil {
		return nil, err
	}
	switch mode {
	case "delay":
		if d <= 0 {
			return nil, fmt.Errorf("%w: link delay %v: need > 0", ErrBadSpec, d)
		}
		return np.addToxics(latencyToxic, dirs, map[string]int64{"latency": d.Milliseconds()})
	case "drop":
		return np.addToxics("timeout", dirs, map[string]int64{"timeout": 0})
	case "reset":
		return np.addToxics("reset_peer", dirs, map[string]int64{"timeout": 0})
	}
	return nil, fmt.Errorf("%w: link fault mode %q is not delay, drop or reset", ErrBadSpec, mode)
}

// linkDialer maps node addresses to one client's link proxies, for clients
// that learn addresses from Sentinel; nil when the client has none.
func (c *Cluster) linkDialer(client int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	c.mu.Lock()
	m := map[string]string{}
	for k, p := range c.links {
		if k.client != client {
			continue
		}
		m[k.node.ServerAddr] = p.p.Listen
		if k.node.ReplAddr != "" {
			m[k.node.ReplAddr] = p.p.Listen
		}
		if k.node.ProxyAddr != "" {
			m[k.node.ProxyAddr] = p.p.Listen
		}
	}
	c.mu.Unlock()
	return mapDialer(m)
}

// LinkToxics lists the toxics active on client's link to node n.
func (c *Cluster) LinkToxics(client int, n *Node) []string {
	lp, err := c.linkOf(client, n)
	if err != nil {
		return nil
	}
	return toxicNames(lp)
}

// MeasureLinkPing measures one PING round trip through client's own link
// proxy to node n (Spec.Links) on a fresh connection: one round trip, so
// that measuring a slow link takes one delay, not four.
func (c *Cluster) MeasureLinkPing(ctx context.Context, client int, n *Node, timeout time.Duration) (time.Duration, error) {
	lp, err := c.linkOf(client, n)
	if err != nil {
		return 0, err
	}
	cl := redis.NewClient(&redis.Options{
		Addr: lp.p.Listen, Password: c.password, TLSConfig: n.tls, Protocol: 2,
		MaxRetries: -1, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
		ContextTimeoutEnabled: true, PoolSize: 1, DisableIdentity: true,
	})
	defer cl.Close()
	t0 := time.Now()
	err = cl.Ping(ctx).Err()
	return time.Since(t0), err
}
