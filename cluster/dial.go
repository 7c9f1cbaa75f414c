package cluster

import (
	"context"
	"crypto/tls"
	"net"
	"time"
)

type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// clientDialer is the dialer of every lock client. dial is where the client
// connects (nil: TCP to the address, TLS when tlsConf is set, as go-redis's
// own dialer does).
//
// A failed dial does not fail the dial: it returns a connection whose first
// read or write returns the dial's error, so the command fails with it and
// the connection is discarded. The reason is go-redis's dial circuit breaker:
// once a pool has seen PoolSize failed dials in all (the count is never reset
// by a successful dial), it answers every command with the last dial error
// until a background probe, retried once a second, connects. A node
// restarted for 50ms would then stay unreachable for a second or more to
// whichever clients happened to try it while it was down, which hides the
// window a restart-empty scenario opens on some seeds and not on others.
// With this dialer a node is reachable as soon as it listens again; a dial
// that fails still fails the command, with the dial's own error.
//
// noCheck hides syscall.Conn so that the pool skips its per-checkout probe
// (see ClientOptions.NoConnCheck).
func clientDialer(dial dialFunc, tlsConf *tls.Config, timeout time.Duration, noCheck bool) dialFunc {
	if dial == nil {
		nd := &net.Dialer{Timeout: timeout, KeepAlive: 5 * time.Minute}
		dial = nd.DialContext
		if tlsConf != nil {
			td := &tls.Dialer{NetDialer: nd, Config: tlsConf}
			dial = td.DialContext
		}
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cn, err := dial(ctx, network, addr)
		if err != nil {
			return dialFailed{err: err, addr: addr}, nil
		}
		if noCheck {
			return plainConn{cn}, nil
		}
		return cn, nil
	}
}

// plainConn hides the methods of a connection beyond net.Conn: go-redis's
// pool skips its liveness probe (pool.connCheck) for such a connection.
type plainConn struct{ net.Conn }

// dialFailed is a connection that never was: every read and write returns
// the dial's error.
type dialFailed struct {
	err  error
	addr string
}

func (d dialFailed) Read([]byte) (int, error)         { return 0, d.err }
func (d dialFailed) Write([]byte) (int, error)        { return 0, d.err }
func (d dialFailed) Close() error                     { return nil }
func (d dialFailed) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (d dialFailed) RemoteAddr() net.Addr             { return failedAddr(d.addr) }
func (d dialFailed) SetDeadline(time.Time) error      { return nil }
func (d dialFailed) SetReadDeadline(time.Time) error  { return nil }
func (d dialFailed) SetWriteDeadline(time.Time) error { return nil }

type failedAddr string

func (a failedAddr) Network() string { return "tcp" }
func (a failedAddr) String() string  { return string(a) }
