// Reproducer for docs/findings/rueidislock-clock-drift.md, without
// lockchaos: with the Redis server's clock ahead of the clients' by more
// than KeyValidity, every acquire returns a live lock context for a key that
// is already gone, and a second client acquires the same lock at once.
//
// Run: bash run.sh (REPRO_VERSION=v1.0.34 bash run.sh for another release).
// It needs redis-server (PATH, or REDIS_SERVER=/path/to/redis-server), Linux,
// and libfaketime (Debian/Ubuntu package libfaketime, or
// REPRO_LIBFAKETIME=/path/to/libfaketime.so.1) or a C compiler (cc).
//
// redis-server runs with its wall clock 1 s ahead of the machine's, which
// the test checks with TIME; the two clients use the machine's clock. The
// clock is moved with libfaketime (LD_PRELOAD, FAKETIME="+1") where it can
// start this redis-server, else with testdata/clockshim.c, a 60-line
// LD_PRELOAD library built with cc (libfaketime 0.9.10 deadlocks at the
// start of Debian's redis-server, linked with libjemalloc and libstdc++);
// with neither, the test is skipped. Client A acquires k with WithContext;
// rueidislock sets the key with SET NX PXAT now+KeyValidity (the client's
// now), an instant already past on the server, so the key is gone at once
// (PTTL -2). While A's lock context is live, client B calls TryWithContext
// on k. The test asserts the mutual exclusion the lock promises, and the
// README's "the returned ctx will be canceled automatically and immediately
// once the KeyMajority is not held anymore": B must not acquire k while A's
// context is live.
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
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// As lockchaos ran it: KeyValidity 200 ms, ExtendInterval left at its
// default (KeyValidity/2), FallbackSETPX left at its default false (SET NX
// PXAT), KeyMajority 1 for one Redis, NoLoopTracking on Redis >= 7.0.5 (the
// README's advice), client-side caching on.
const keyValidity = 200 * time.Millisecond

// The server's clock lead: 5 times KeyValidity (any lead larger than
// KeyValidity does the same). Whole seconds for libfaketime's FAKETIME, so
// that no locale decides its decimal separator.
const (
	lead     = time.Second
	fakeTime = "+1"
)

func TestServerClockAheadSecondClientAcquires(t *testing.T) {
	env, mechanism := clockAhead(t)
	addr, noLoop := startRedis(t, env...)
	ahead := serverLead(t, addr)
	if ahead < lead-100*time.Millisecond || ahead > lead+100*time.Millisecond {
		t.Fatalf("setup: redis-server's clock is %.3f s ahead of the machine's, not %.3f s: %s did not take effect", ahead.Seconds(), lead.Seconds(), mechanism)
	}
	t.Logf("redis-server's clock is %.3f s ahead of the machine's (%s)", ahead.Seconds(), mechanism)
	a := newLocker(t, addr, noLoop)
	b := newLocker(t, addr, noLoop)

	aCtx, _ := acquire(t, a, "k", 2*time.Second)
	tA := time.Now() // times below are milliseconds after A's WithContext returned
	at := func(x time.Time) float64 { return float64(x.Sub(tA)) / float64(time.Millisecond) }
	var aDone atomic.Int64 // when A's lock context ended, ns after tA
	context.AfterFunc(aCtx, func() { aDone.Store(int64(time.Since(tA))) })

	r, err := redisDo(addr, "PTTL", "rueidislock:0:k")
	if err != nil {
		t.Fatalf("setup: PTTL rueidislock:0:k: %v", err)
	}
	pttl, tP := r[0], time.Now()

	if aCtx.Err() != nil {
		t.Logf("A's lock context was cancelled %.1f ms after A acquired k, before B tried: the library told A it does not hold k (PTTL %s)", ms(time.Duration(aDone.Load())), pttl)
		return
	}
	tCall := time.Now()
	_, _, err = b.TryWithContext(context.Background(), "k")
	tB := time.Now()
	if errors.Is(err, rueidislock.ErrNotLocked) {
		t.Logf("B's TryWithContext %.1f ms after A acquired k was refused while A held k (PTTL %s at %.1f ms)", at(tCall), pttl, at(tP))
		return
	}
	if err != nil {
		t.Fatalf("setup: client B's TryWithContext: %v", err)
	}

	select {
	case <-aCtx.Done():
	case <-time.After(2 * keyValidity):
	}
	aEnd := fmt.Sprintf("still live at %.1f ms, when the test stopped waiting", at(time.Now()))
	if d := aDone.Load(); d > 0 {
		aEnd = fmt.Sprintf("cancelled only at %.1f ms", ms(time.Duration(d)))
	}
	t.Logf("server clock %.3f s ahead; A's WithContext returned at 0 ms; PTTL of A's key at %.1f ms: %s; B called TryWithContext at %.1f ms, which returned k at %.1f ms; A's lock context: %s",
		ahead.Seconds(), at(tP), pttl, at(tCall), at(tB), aEnd)
	t.Errorf("REPRODUCED: client B acquired k %.1f ms after client A did, while A's lock context was live (live when B called TryWithContext at %.1f ms, %s), because A's key was already gone from the server (PTTL %s at %.1f ms): the server's clock is %.3f s ahead of the clients' and KeyValidity is %v",
		at(tB), at(tCall), aEnd, pttl, at(tP), ahead.Seconds(), keyValidity)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// clockAhead is the environment that starts redis-server with its wall
// clock lead ahead, and its name: libfaketime if it can start this
// redis-server, else testdata/clockshim.c built with cc; or it skips the test.
func clockAhead(t *testing.T) (env []string, mechanism string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("skipped: the server's clock is moved through LD_PRELOAD, which this test does on Linux only (GOOS %s)", runtime.GOOS)
	}
	why := "libfaketime not found (the libfaketime package, or REPRO_LIBFAKETIME=/path/to/libfaketime.so.1)"
	if lib := libfaketime(); lib != "" {
		env = []string{"LD_PRELOAD=" + lib, "FAKETIME=" + fakeTime}
		// libfaketime 0.9.10 deadlocks at the start of some builds (Debian's
		// redis-server): a --version that does not return in 2 s says so.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		probe := exec.CommandContext(ctx, redisServer(t), "--version")
		probe.Env = append(os.Environ(), env...)
		probe.WaitDelay = time.Second
		if err := probe.Run(); err == nil {
			return env, "libfaketime " + lib + ", FAKETIME=" + fakeTime
		}
		why = "libfaketime (" + lib + ") did not let redis-server --version return in 2 s"
		t.Logf("%s; using testdata/clockshim.c instead", why)
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skipf("skipped: this test needs the server's clock ahead of the clients': %s, and no C compiler (cc) to build testdata/clockshim.c", why)
	}
	so := t.TempDir() + "/clockshim.so"
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", so, "testdata/clockshim.c").CombinedOutput(); err != nil {
		t.Fatalf("setup: building testdata/clockshim.c: %v\n%s", err, out)
	}
	return []string{"LD_PRELOAD=" + so, fmt.Sprintf("REPRO_CLOCK_OFFSET_MS=%d", lead.Milliseconds())}, "testdata/clockshim.c, REPRO_CLOCK_OFFSET_MS=" + strconv.FormatInt(lead.Milliseconds(), 10)
}

// libfaketime is the path of libfaketime.so.1, or "".
func libfaketime() string {
	candidates := []string{os.Getenv("REPRO_LIBFAKETIME")}
	for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"} {
		candidates = append(candidates, dir+"/faketime/libfaketime.so.1")
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	return ""
}

// serverLead: how far the server's clock (TIME) is ahead of the machine's.
func serverLead(t *testing.T, addr string) time.Duration {
	t.Helper()
	before := time.Now()
	r, err := redisDo(addr, "TIME")
	after := time.Now()
	if err != nil || len(r) != 2 {
		t.Fatalf("setup: TIME: %v %v", r, err)
	}
	sec, err1 := strconv.ParseInt(r[0], 10, 64)
	usec, err2 := strconv.ParseInt(r[1], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("setup: TIME answered %q", r)
	}
	server := time.Unix(sec, usec*1000)
	return server.Sub(before.Add(after.Sub(before) / 2))
}

// acquire takes name with WithContext, the wait bounded by within. The
// lock's context must outlive the wait, so the wait is bounded by cancelling
// the parent, not by a deadline (rueidislock would shorten the lock to a
// parent's deadline).
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

// redisServer is $REDIS_SERVER, else redis-server from PATH.
func redisServer(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("REDIS_SERVER"); bin != "" {
		return bin
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("setup: redis-server not found in PATH (set REDIS_SERVER): %v", err)
	}
	return bin
}

// startRedis starts a redis-server of its own on a free loopback port,
// with env added to its environment, killed in t.Cleanup, and says whether NoLoopTracking applies (>= 7.0.5).
func startRedis(t *testing.T, env ...string) (addr string, noLoop bool) {
	t.Helper()
	bin := redisServer(t)
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
	cmd.Env = append(os.Environ(), env...)
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
