// Reproducer for docs/findings/rueidislock-stalled-acquire.md, without
// lockchaos: while Redis answers a little later than TryNextAfter (20 ms),
// WithContext does not acquire a free key; and once Redis answers on time
// again, the waiting WithContext is not retried.
//
// Run: bash run.sh (REPRO_VERSION=v1.0.34 bash run.sh for another release).
// It needs redis-server (PATH, or REDIS_SERVER=/path/to/redis-server).
//
// One client's rueidis client talks to Redis through a TCP proxy in this
// test that can delay what the client sends, in order: every command then
// takes that much longer, as from a Redis that far away. The delay is 25 ms,
// a little over TryNextAfter's default 20 ms (the page's 20 ms is the
// bound itself: through a real socket, old releases then sometimes win the
// race between the reply and their timeout). Nobody else uses the key, so it
// is free throughout.
//
//   - TestAcquireWhileCommandsSlow: every command 25 ms slow for the whole
//     test; WithContext must acquire the free key within 1 s. rueidislock
//     bounds each key's SET by TryNextAfter, so no attempt succeeds (every
//     release).
//   - TestWaiterRetriedAfterSlowdownEnds: commands 25 ms slow for 450 ms,
//     then on time; the waiting WithContext must acquire the free key within
//     2×KeyValidity (400 ms, lockchaos's acquire timeout) of the end of the
//     slowdown. From v1.0.50 (v1.0.34 and older retry) a WithContext whose
//     attempt timed out waits for a client-side caching notification that
//     never comes (nobody else wrote the key), until its caller's context
//     ends.
package repro

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// As lockchaos ran it: KeyValidity 200 ms, ExtendInterval and TryNextAfter
// (20 ms) left at their defaults, KeyMajority 1 for one Redis,
// NoLoopTracking on Redis >= 7.0.5 (the README's advice), client-side
// caching on.
const (
	keyValidity  = 200 * time.Millisecond
	tryNextAfter = 20 * time.Millisecond // the library's default, not set here
	slow         = 25 * time.Millisecond // how late the proxy forwards each command
	// How soon after the slowdown a waiter must have the free key: the
	// acquire timeout lockchaos gives it. v1.0.14 and v1.0.19 wait
	// ExtendInterval after each failed attempt, so up to about twice that.
	retryBound = 2 * keyValidity
)

func TestAcquireWhileCommandsSlow(t *testing.T) {
	addr, noLoop := startRedis(t)
	px := startProxy(t, addr)
	lk := newLocker(t, px.addr(), noLoop)
	warmUp(t, lk)

	px.setDelay(slow)
	rtt := pingThrough(t, px.addr())
	resetStats(t, addr)
	const within = time.Second
	start := time.Now()
	_, unlock, err := withContext(lk, "k", within)
	took := time.Since(start)
	if err == nil {
		t.Logf("WithContext acquired the free key k after %.3f s, every command taking %.1f ms (a PING through the proxy)", took.Seconds(), ms(rtt))
		unlock()
		return
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("setup: WithContext: %v", err)
	}
	sets, dels := commandCalls(t, addr)
	t.Logf("WithContext returned %v after %.3f s; meanwhile %d SET and %d DEL reached Redis; k exists: %s", err, took.Seconds(), sets, dels, exists(t, addr))
	t.Errorf("REPRODUCED: WithContext did not acquire the free key k in %.3f s while every command took %.1f ms (a PING through the same proxy), a little more than TryNextAfter (%v); Redis ran %d of its SETs meanwhile, none answered within that bound",
		took.Seconds(), ms(rtt), tryNextAfter, sets)
}

func TestWaiterRetriedAfterSlowdownEnds(t *testing.T) {
	addr, noLoop := startRedis(t)
	px := startProxy(t, addr)
	lk := newLocker(t, px.addr(), noLoop)
	warmUp(t, lk)

	const stall, wait = 450 * time.Millisecond, time.Second
	resetStats(t, addr)
	px.setDelay(slow)
	start := time.Now()
	at := func(x time.Time) float64 { return x.Sub(start).Seconds() }
	var endNs atomic.Int64
	time.AfterFunc(stall, func() { px.setDelay(0); endNs.Store(int64(time.Since(start))) })
	limit := start.Add(stall + wait)

	// Acquire in a loop, as a worker does; an acquire that succeeds during
	// the slowdown is released at once, and the loop goes on until the first
	// acquire after it.
	during := 0
	var tAcq time.Time
	var err error
	for {
		var unlock context.CancelFunc
		_, unlock, err = withContext(lk, "k", time.Until(limit))
		if err != nil {
			break
		}
		if endNs.Load() == 0 {
			during++
			unlock()
			continue
		}
		tAcq = time.Now()
		unlock()
		break
	}
	tStop := time.Now()
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("setup: WithContext: %v", err)
	}
	end := start.Add(time.Duration(endNs.Load()))
	if endNs.Load() == 0 {
		t.Fatalf("setup: the slowdown did not end")
	}
	sets, dels := commandCalls(t, addr)
	t.Logf("commands slowed by %v from 0.000 s to %.3f s; %d acquires during it; %d SET and %d DEL reached Redis in all; k exists at the end: %s",
		slow, at(end), during, sets, dels, exists(t, addr))
	switch {
	case tAcq.IsZero():
		t.Errorf("REPRODUCED: WithContext on the free key k had not acquired it %.3f s after commands sped up again at %.3f s (it returned %q when its context ended at %.3f s), after %d acquires during the %v slowdown of every command by %v (TryNextAfter %v)",
			tStop.Sub(end).Seconds(), at(end), err.Error(), at(tStop), during, stall, slow, tryNextAfter)
	case tAcq.Sub(end) > retryBound:
		t.Errorf("REPRODUCED: WithContext on the free key k acquired it only at %.3f s, %.0f ms after commands sped up again at %.3f s (more than 2×KeyValidity, %v), after %d acquires during the %v slowdown of every command by %v (TryNextAfter %v)",
			at(tAcq), ms(tAcq.Sub(end)), at(end), retryBound, during, stall, slow, tryNextAfter)
	default:
		t.Logf("WithContext acquired k at %.3f s, %.0f ms after commands sped up again", at(tAcq), ms(tAcq.Sub(end)))
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// withContext takes name with WithContext, the wait bounded by within. The
// lock's context must outlive the wait, so the wait is bounded by cancelling
// the parent, not by a deadline (rueidislock would shorten the lock to a
// parent's deadline). The unlock it returns also ends the parent.
func withContext(lk rueidislock.Locker, name string, within time.Duration) (context.Context, context.CancelFunc, error) {
	parent, cancelParent := context.WithCancel(context.Background())
	timer := time.AfterFunc(within, cancelParent)
	ctx, unlock, err := lk.WithContext(parent, name)
	if err != nil {
		cancelParent()
		return nil, nil, err
	}
	if !timer.Stop() {
		unlock()
		return nil, nil, context.Canceled
	}
	return ctx, func() { unlock(); cancelParent() }, nil
}

// warmUp takes and releases k a few times with commands on time, so the
// library's scripts are loaded and its connection is up.
func warmUp(t *testing.T, lk rueidislock.Locker) {
	t.Helper()
	for i := 0; i < 3; i++ {
		_, unlock, err := withContext(lk, "k", 2*time.Second)
		if err != nil {
			t.Fatalf("setup: warm-up WithContext on a free key: %v", err)
		}
		unlock()
	}
}

// pingThrough times a PING through the proxy on a connection of its own.
func pingThrough(t *testing.T, addr string) time.Duration {
	t.Helper()
	start := time.Now()
	if r, err := redisDo(addr, "PING"); err != nil || r[0] != "PONG" {
		t.Fatalf("setup: PING through the proxy: %v %v", r, err)
	}
	return time.Since(start)
}

func resetStats(t *testing.T, addr string) {
	t.Helper()
	if _, err := redisDo(addr, "CONFIG", "RESETSTAT"); err != nil {
		t.Fatalf("setup: CONFIG RESETSTAT: %v", err)
	}
}

// commandCalls: how many SET and DEL Redis ran since resetStats, scripts'
// included.
func commandCalls(t *testing.T, addr string) (sets, dels int) {
	t.Helper()
	r, err := redisDo(addr, "INFO", "commandstats")
	if err != nil {
		t.Fatalf("setup: INFO commandstats: %v", err)
	}
	calls := func(cmd string) int {
		m := regexp.MustCompile(`(?m)^cmdstat_` + cmd + `:calls=(\d+)`).FindStringSubmatch(r[0])
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return calls("set"), calls("del")
}

func exists(t *testing.T, addr string) string {
	t.Helper()
	r, err := redisDo(addr, "EXISTS", "rueidislock:0:k")
	if err != nil {
		t.Fatalf("setup: EXISTS: %v", err)
	}
	return r[0]
}

func newLocker(t *testing.T, addr string, noLoop bool) rueidislock.Locker {
	t.Helper()
	lk, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: []string{addr}},
		KeyValidity:    keyValidity,
		KeyMajority:    1,
		NoLoopTracking: noLoop,
	})
	if err != nil {
		t.Fatalf("setup: rueidislock.NewLocker(%s): %v", addr, err)
	}
	t.Cleanup(func() {
		done := make(chan struct{})
		go func() { lk.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			t.Logf("a locker's Close did not return in 3 s; left behind")
		}
	})
	return lk
}

// startRedis starts a redis-server of its own on a free loopback port,
// killed in t.Cleanup, and says whether NoLoopTracking applies (>= 7.0.5).
func startRedis(t *testing.T) (addr string, noLoop bool) {
	t.Helper()
	bin := os.Getenv("REDIS_SERVER")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			t.Fatalf("setup: redis-server not found in PATH (set REDIS_SERVER): %v", err)
		}
	}
	out, err := exec.Command(bin, "--version").Output()
	m := regexp.MustCompile(`v=(\d+)\.(\d+)\.(\d+)`).FindStringSubmatch(string(out))
	if err != nil || m == nil {
		t.Fatalf("setup: %s --version: %v %q", bin, err, out)
	}
	v := [3]int{}
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	noLoop = v[0] > 7 || v[0] == 7 && (v[1] > 0 || v[2] >= 5)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("setup: free port: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("setup: start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	for limit := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r, err := redisDo(addr, "PING"); err == nil && r[0] == "PONG" {
			break
		}
		select {
		case <-exited:
			t.Fatalf("setup: redis-server exited at start:\n%s", log.String())
		default:
		}
		if time.Now().After(limit) {
			t.Fatalf("setup: redis-server on %s did not answer PING in 5 s", addr)
		}
	}
	t.Logf("rueidis %s, redis-server %s.%s.%s on %s, NoLoopTracking %v", rueidisVersion(), m[1], m[2], m[3], addr, noLoop)
	return addr, noLoop
}

// rueidisVersion asks the go command which rueidis this module builds
// with (a test binary carries no dependency versions).
func rueidisVersion() string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/redis/rueidis").Output()
	if err != nil {
		return "(version unknown)"
	}
	return strings.TrimSpace(string(out))
}

// redisDo sends one command on a connection of its own (RESP2) and returns
// the reply's strings.
func redisDo(addr string, args ...string) ([]string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		return nil, err
	}
	return readReply(bufio.NewReader(c))
}

func readReply(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return nil, errors.New("empty reply line")
	}
	switch line[0] {
	case '+', ':':
		return []string{line[1:]}, nil
	case '-':
		return nil, errors.New(line[1:])
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return []string{""}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return []string{string(buf[:n])}, nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		var out []string
		for i := 0; i < n; i++ {
			s, err := readReply(r)
			if err != nil {
				return nil, err
			}
			out = append(out, s...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}

// proxy forwards loopback TCP connections to Redis; what a client sends is
// forwarded in order, each chunk the delay current when it arrived later
// (setDelay). Replies are forwarded at once.
type proxy struct {
	ln     net.Listener
	delay  atomic.Int64 // nanoseconds
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("setup: proxy listen: %v", err)
	}
	p := &proxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.DialTimeout("tcp", target, time.Second)
			if err != nil {
				c.Close()
				continue
			}
			if !p.track(c, s) {
				return
			}
			go p.delayed(s, c)
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) setDelay(d time.Duration) { p.delay.Store(int64(d)) }

func (p *proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	p.conns = append(p.conns, cs...)
	return true
}

func (p *proxy) delayed(dst, src net.Conn) {
	type chunk struct {
		due time.Time
		b   []byte
	}
	q := make(chan chunk, 4096)
	go func() {
		defer dst.Close()
		for c := range q {
			time.Sleep(time.Until(c.due))
			if _, err := dst.Write(c.b); err != nil {
				return
			}
		}
	}()
	defer close(q)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			q <- chunk{time.Now().Add(time.Duration(p.delay.Load())), bytes.Clone(buf[:n])}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}
