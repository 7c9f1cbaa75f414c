// Reproducer for docs/findings/rueidislock-partitioned-holder.md, without
// lockchaos: a holder cut off from Redis keeps its lock's context live past
// its key's expiry, while another client acquires the key.
//
// Run: bash run.sh (REPRO_VERSION=v1.0.34 bash run.sh for another release).
// It needs redis-server (PATH, or REDIS_SERVER=/path/to/redis-server).
//
// Client A's rueidis client talks to Redis through a TCP proxy in this test.
// A acquires k with WithContext; the proxy is then cut silently (both ways'
// bytes dropped, connections left open, as a partition does). Client B,
// connected directly, polls TryWithContext until it gets k, which it does
// once A's key expires on the server, KeyValidity after A's acquire. The test
// asserts the README's promise that A's context "will be canceled
// automatically and immediately once the KeyMajority is not held anymore":
// A's context must be done by the time B holds k.
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

// As lockchaos ran it: KeyValidity 500 ms, ExtendInterval left at its
// default (KeyValidity/2), KeyMajority 1 for one Redis, NoLoopTracking on
// Redis >= 7.0.5 (the README's advice), client-side caching on.
const keyValidity = 500 * time.Millisecond

func TestPartitionedHolderContextOutlivesKey(t *testing.T) {
	addr, noLoop := startRedis(t)
	px := startProxy(t, addr)
	a := newLocker(t, px.addr(), noLoop) // the holder, behind the proxy
	b := newLocker(t, addr, noLoop)      // the next client, direct
	t.Cleanup(px.close)                  // runs before the lockers' Close: A's connection ends first

	start := time.Now()
	at := func(x time.Time) float64 { return x.Sub(start).Seconds() }

	// A acquires k as an application does. The lock's context must outlive
	// the wait, so the wait is bounded by cancelling the parent, not by a
	// deadline (rueidislock would shorten the lock to a parent's deadline).
	aCtx, _ := acquire(t, a, "k", 2*time.Second)
	tA := time.Now()
	var aDone atomic.Int64 // when A's lock context ended, ns since start
	context.AfterFunc(aCtx, func() { aDone.Store(int64(time.Since(start))) })

	// Cut A off from Redis right after its acquire: nothing A sends reaches
	// Redis (its background extension included) and nothing comes back.
	px.cut()
	tCut := time.Now()
	// When A's key expires on the server, from a direct connection.
	r, err := redisDo(addr, "PTTL", "rueidislock:0:k")
	if err != nil {
		t.Fatalf("setup: PTTL of A's key rueidislock:0:k: %v", err)
	}
	pttl, _ := strconv.Atoi(r[0])
	if pttl <= 0 {
		t.Fatalf("setup: PTTL of A's key rueidislock:0:k right after its acquire: %s", r[0])
	}
	tExp := time.Now().Add(time.Duration(pttl) * time.Millisecond)

	// B polls every 5 ms (a poll, not WithContext, so that B's acquire does
	// not depend on when Redis's expiry cycle notices the key).
	var tB time.Time
	var aLiveAtB bool
	for limit := tExp.Add(2 * keyValidity); ; {
		_, _, err := b.TryWithContext(context.Background(), "k")
		if err == nil {
			tB = time.Now()
			aLiveAtB = aCtx.Err() == nil
			break
		}
		if !errors.Is(err, rueidislock.ErrNotLocked) {
			t.Fatalf("setup: client B's TryWithContext: %v", err)
		}
		if time.Now().After(limit) {
			t.Fatalf("setup: client B did not acquire k by %.3f s, %v after A's key expired", at(limit), 2*keyValidity)
		}
		time.Sleep(5 * time.Millisecond)
	}

	// How long A's context stayed live (a bounded wait).
	select {
	case <-aCtx.Done():
	case <-time.After(3 * keyValidity):
	}
	aEnd := fmt.Sprintf("still live at %.3f s, when the test stopped waiting", at(time.Now()))
	if d := aDone.Load(); d > 0 {
		aEnd = fmt.Sprintf("cancelled only at %.3f s", time.Duration(d).Seconds())
	}
	t.Logf("A acquired k at %.3f s and was cut off at %.3f s; A's key expired on the server at %.3f s (PTTL %d ms); B acquired k at %.3f s; A's lock context: %s",
		at(tA), at(tCut), at(tExp), pttl, at(tB), aEnd)
	if aLiveAtB {
		t.Errorf("REPRODUCED: client B acquired k at %.3f s while client A, cut off from Redis since %.3f s, still had a live lock context (%s), although A's key had expired on the server at %.3f s (KeyValidity %v, ExtendInterval %v)",
			at(tB), at(tCut), aEnd, at(tExp), keyValidity, keyValidity/2)
	}
}

// acquire takes name with WithContext, the wait bounded by within.
func acquire(t *testing.T, lk rueidislock.Locker, name string, within time.Duration) (context.Context, context.CancelFunc) {
	t.Helper()
	parent, cancelParent := context.WithCancel(context.Background())
	timer := time.AfterFunc(within, cancelParent)
	ctx, unlock, err := lk.WithContext(parent, name)
	if !timer.Stop() || err != nil {
		cancelParent()
		t.Fatalf("setup: WithContext(%q) on a free key did not acquire within %v: %v", name, within, err)
	}
	t.Cleanup(cancelParent)
	return ctx, unlock
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

// proxy forwards loopback TCP connections to Redis; cut makes it drop every
// byte both ways from then on, leaving the connections open (a silent
// partition: commands get no answer, no error).
type proxy struct {
	ln     net.Listener
	cutOff atomic.Bool
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
			go p.pipe(s, c)
			go p.pipe(c, s)
		}
	}()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) cut() { p.cutOff.Store(true) }

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

func (p *proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.cutOff.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
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
