package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// replProxy is a TCP forwarder in front of one data node of the sentinel
// topology. Sentinels, replicas and failover clients know the node by the
// proxy's address (the node announces it with replica-announce-port), so
// every replication link of the deployment, also the ones Sentinel sets up
// after a failover, runs through the proxy of the node that sends the stream.
//
// The proxy delays only the server→client direction of replication
// connections (the ones whose client sent REPLCONF or PSYNC: a replica):
// the replica then lags the master by the delay, as behind a slow link.
// Queued bytes are dropped when either side closes, as a master's unsent
// output buffer is lost when it dies: that is the window a failover loses.
type replProxy struct {
	ln     net.Listener
	target string
	delay  atomic.Int64 // ns

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
	// replCut: replication through this proxy is cut (IsolateNode): live
	// replication connections were closed, and a new one is closed as soon
	// as it sends its handshake. Client traffic passes.
	replCut bool
	repls   map[net.Conn]func() // live replication connections → their end
}

func newReplProxy() (*replProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%w: replication proxy: %v", ErrInfra, err)
	}
	return &replProxy{ln: ln, conns: map[net.Conn]struct{}{}, repls: map[net.Conn]func(){}}, nil
}

func (p *replProxy) addr() string { return p.ln.Addr().String() }
func (p *replProxy) port() string { return strconv.Itoa(p.ln.Addr().(*net.TCPAddr).Port) }

// serve forwards every accepted connection to target until close.
func (p *replProxy) serve(target string) {
	p.target = target
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := p.ln.Accept()
			if err != nil {
				return
			}
			if !p.track(c) {
				_ = c.Close()
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.forward(c)
			}()
		}
	}()
}

func (p *replProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *replProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	for _, c := range cs {
		delete(p.conns, c)
	}
	p.mu.Unlock()
}

// setDelay sets the replication delay for bytes read from now on.
func (p *replProxy) setDelay(d time.Duration) { p.delay.Store(int64(d)) }

// cutReplication closes every replication connection through the proxy and
// every new one until healReplication; it returns how many it closed.
func (p *replProxy) cutReplication() int {
	p.mu.Lock()
	p.replCut = true
	ends := make([]func(), 0, len(p.repls))
	for _, end := range p.repls {
		ends = append(ends, end)
	}
	p.mu.Unlock()
	for _, end := range ends {
		end()
	}
	return len(ends)
}

func (p *replProxy) healReplication() {
	p.mu.Lock()
	p.replCut = false
	p.mu.Unlock()
}

// replicating registers a connection found to carry replication; false
// when replication is cut (the caller ends it).
func (p *replProxy) replicating(c net.Conn, end func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.replCut {
		return false
	}
	p.repls[c] = end
	return true
}

// close stops accepting, cuts every connection and waits for the goroutines.
func (p *replProxy) close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

type chunk struct {
	b   []byte
	due time.Time
}

// Replicas open their link with PING then REPLCONF listening-port, and PSYNC;
// nobody else sends these (RESP bulk strings, upper case as redis writes them).
var replMarks = [][]byte{[]byte("$8\r\nREPLCONF\r\n"), []byte("$5\r\nPSYNC\r\n")}

// forward carries one connection to the target: client → server as it
// comes, server → client each chunk at its due time (delayed once the
// client showed itself a replica).
func (p *replProxy) forward(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		_ = client.Close()
		p.untrack(client)
		return
	}
	if !p.track(server) {
		_ = server.Close()
		_ = client.Close()
		p.untrack(client)
		return
	}
	l := &replLink{p: p, client: client, server: server, done: make(chan struct{}), queue: make(chan chunk, 1024)}
	var wg sync.WaitGroup
	for _, f := range []func(){l.upstream, l.readServer, l.deliver} {
		wg.Go(func() {
			defer l.end()
			f()
		})
	}
	wg.Wait()
}

// replLink is one forwarded connection.
type replLink struct {
	p              *replProxy
	client, server net.Conn
	done           chan struct{} // closed by end
	once           sync.Once
	isRepl         atomic.Bool
	queue          chan chunk // server → client
}

// end closes both sides, once.
func (l *replLink) end() {
	l.once.Do(func() {
		close(l.done)
		_ = l.client.Close()
		_ = l.server.Close()
		l.p.untrack(l.client, l.server)
		l.p.mu.Lock()
		delete(l.p.repls, l.client)
		l.p.mu.Unlock()
	})
}

// upstream copies client → server, sniffing for a replica's handshake.
func (l *replLink) upstream() {
	var seen []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := l.client.Read(buf)
		if n > 0 {
			if !l.isRepl.Load() && len(seen) < 4096 {
				seen = append(seen, buf[:n]...)
				for _, m := range replMarks {
					if !l.isRepl.Load() && bytes.Contains(seen, m) {
						l.isRepl.Store(true)
						if !l.p.replicating(l.client, l.end) {
							return
						}
					}
				}
			}
			if _, werr := l.server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// readServer queues what the server sends, each chunk due now, or after
// the delay on a replica's link.
func (l *replLink) readServer() {
	for {
		buf := make([]byte, 32<<10)
		n, err := l.server.Read(buf)
		if n > 0 {
			due := time.Now()
			if l.isRepl.Load() {
				due = due.Add(time.Duration(l.p.delay.Load()))
			}
			select {
			case l.queue <- chunk{buf[:n], due}:
			case <-l.done:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// deliver writes the queue to the client, each chunk at its due time.
func (l *replLink) deliver() {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		var c chunk
		select {
		case c = <-l.queue:
		case <-l.done:
			return
		}
		if wait := time.Until(c.due); wait > 0 {
			t.Reset(wait)
			select {
			case <-t.C:
			case <-l.done:
				return
			}
		}
		if _, err := l.client.Write(c.b); err != nil {
			return
		}
	}
}
