package cluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// busProxy is a TCP forwarder in front of one cluster node's bus port: the
// node announces the proxy's port (cluster-announce-bus-port), so every
// other node's link to it runs through the proxy. Each node sends from its
// own loopback address (bind-source-addr 127.0.0.<10+i>), so a proxy knows
// which node a link comes from and can cut the links of chosen nodes: that
// is how a master is partitioned from the rest of the cluster while clients
// still reach it (Cluster.IsolateNode).
//
// A cut closes the links it covers and closes every new one at once: the
// sender's connect succeeds and its PING goes unanswered, as behind a
// partition (the node's failure detection counts from its last reply).
type busProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	conns   map[net.Conn]string // accepted links → their source address
	peers   map[net.Conn]net.Conn
	all     bool            // every link is cut
	from    map[string]bool // links from these source addresses are cut
	closed  bool
	wg      sync.WaitGroup
	refused int
}

func newBusProxy() (*busProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%w: cluster bus proxy: %v", ErrInfra, err)
	}
	return &busProxy{ln: ln, conns: map[net.Conn]string{}, peers: map[net.Conn]net.Conn{}, from: map[string]bool{}}, nil
}

func (p *busProxy) port() string { return strconv.Itoa(p.ln.Addr().(*net.TCPAddr).Port) }

// serveNode forwards to n's bus port (10000 above its port).
func (p *busProxy) serveNode(n *Node) error {
	_, port, _ := strings.Cut(n.ServerAddr, ":")
	pn, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("%w: cluster bus of %s: port %q", ErrInfra, n.Name, port)
	}
	p.serve("127.0.0.1:" + strconv.Itoa(pn+10000))
	return nil
}

// serve forwards every accepted link to target until close.
func (p *busProxy) serve(target string) {
	p.target = target
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := p.ln.Accept()
			if err != nil {
				return
			}
			src := c.RemoteAddr().(*net.TCPAddr).IP.String()
			p.mu.Lock()
			if p.closed {
				p.mu.Unlock()
				_ = c.Close()
				return
			}
			if p.all || p.from[src] {
				p.refused++
				p.mu.Unlock()
				_ = c.Close()
				continue
			}
			p.conns[c] = src
			p.mu.Unlock()
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.forward(c)
			}()
		}
	}()
}

func (p *busProxy) forward(c net.Conn) {
	s, err := net.DialTimeout("tcp", p.target, time.Second)
	p.mu.Lock()
	_, live := p.conns[c]
	if err == nil && live {
		p.peers[c] = s
	}
	p.mu.Unlock()
	if err != nil || !live {
		if s != nil {
			_ = s.Close()
		}
		_ = c.Close()
		p.drop(c)
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(s, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, s); done <- struct{}{} }()
	<-done
	_ = c.Close()
	_ = s.Close()
	<-done
	p.drop(c)
}

func (p *busProxy) drop(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.peers, c)
	p.mu.Unlock()
}

// cut cuts every link (all) or the links from the source addresses from,
// now and until heal, and returns how many live links it closed.
func (p *busProxy) cut(all bool, from ...string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.all = p.all || all
	for _, f := range from {
		p.from[f] = true
	}
	n := 0
	for c, src := range p.conns {
		if p.all || p.from[src] {
			_ = c.Close()
			if s := p.peers[c]; s != nil {
				_ = s.Close()
			}
			delete(p.conns, c)
			delete(p.peers, c)
			n++
		}
	}
	return n
}

// heal lifts the cut of every link (all) and of links from the source
// addresses from.
func (p *busProxy) heal(all bool, from ...string) {
	p.mu.Lock()
	if all {
		p.all = false
	}
	for _, f := range from {
		delete(p.from, f)
	}
	p.mu.Unlock()
}

// close stops accepting, cuts every link and waits for the goroutines.
func (p *busProxy) close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
		if s := p.peers[c]; s != nil {
			_ = s.Close()
		}
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
