package cluster

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/internal/testenv"
)

// startClocked starts n independent masters with real server clocks; it
// skips without gcc (the shim cannot be built: that fallback has its own
// test) and fails when the shim was built but a node has no clock.
func startClocked(t *testing.T, n int) *Cluster {
	t.Helper()
	testenv.Need(t, "gcc") // the clock shim
	c := startProc(t, Spec{Topology: Independent, Nodes: n, RealClock: true})
	for _, node := range c.Nodes {
		if node.Clock == nil {
			t.Fatalf("node %s has no real clock: %s", node.Name, c.ClockWhy)
		}
	}
	return c
}

func offsetOf(t *testing.T, ctx context.Context, cl *redis.Client) time.Duration {
	t.Helper()
	off, rtt, err := MeasureOffset(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if rtt > 5*time.Millisecond {
		// A slow round trip widens the measure; take another.
		if off, _, err = MeasureOffset(ctx, cl); err != nil {
			t.Fatal(err)
		}
	}
	return off
}

func near(d, want, tol time.Duration) bool { return d >= want-tol && d <= want+tol }

// A jump moves the server's TIME by the jump (±10ms), only on that node,
// and survives a restart of the node (the clock file stays).
func TestRealClockJumpShiftsTIME(t *testing.T) {
	c := startClocked(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := c.AdminClient(c.Nodes[0]), c.AdminClient(c.Nodes[1])
	if off := offsetOf(t, ctx, a); !near(off, 0, 10*time.Millisecond) {
		t.Fatalf("before the jump n1 is %v off the host clock, want 0±10ms", off)
	}
	const jump = 90 * time.Second
	if _, err := c.Nodes[0].Clock.Jump(jump); err != nil {
		t.Fatal(err)
	}
	if off := offsetOf(t, ctx, a); !near(off, jump, 10*time.Millisecond) {
		t.Fatalf("after a %v jump n1's TIME is %v off the host clock, want %v±10ms", jump, off, jump)
	}
	if off := offsetOf(t, ctx, b); !near(off, 0, 10*time.Millisecond) {
		t.Fatalf("n2 (no jump) is %v off the host clock, want 0±10ms", off)
	}
	if err := c.Nodes[0].Ctl.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.Nodes[0].Ctl.Restart(ctx, true); err != nil {
		t.Fatal(err)
	}
	if off := offsetOf(t, ctx, a); !near(off, jump, 10*time.Millisecond) {
		t.Fatalf("after a restart n1's TIME is %v off the host clock, want %v±10ms (the clock must survive)", off, jump)
	}
}

// Expiry follows the server's clock: a key set with PX 1000 before a +900ms
// jump expires within ~150ms of it, the same key on a node without the jump
// lives on; a key set after the jump expires PX after the server's shifted
// now; PXAT at a host time the server has passed expires at once.
func TestRealClockJumpExpiresKeys(t *testing.T) {
	c := startClocked(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := c.AdminClient(c.Nodes[0]), c.AdminClient(c.Nodes[1])
	for _, cl := range []*redis.Client{a, b} {
		if err := cl.Set(ctx, "k", "v", time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Nodes[0].Clock.Jump(900 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	jumped := time.Now()
	for a.Exists(ctx, "k").Val() == 1 {
		if time.Since(jumped) > 150*time.Millisecond {
			t.Fatalf("key with 1s TTL still on n1 %v after a +900ms jump", time.Since(jumped))
		}
		time.Sleep(5 * time.Millisecond)
	}
	gone := time.Since(jumped)
	if b.Exists(ctx, "k").Val() != 1 {
		t.Fatalf("key on n2 (no jump) gone %v after it was set with PX 1000", time.Since(jumped))
	}
	t.Logf("n1's key expired %v after the jump", gone)

	// Set after the jump: PEXPIRETIME is the server's shifted now + 1000ms.
	if err := a.Set(ctx, "k2", "v", time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	at, err := a.PExpireTime(ctx, "k2").Result()
	if err != nil {
		t.Fatal(err)
	}
	want := time.Now().Add(900*time.Millisecond + time.Second)
	if d := time.UnixMilli(int64(at / time.Millisecond)).Sub(want); !near(d, 0, 15*time.Millisecond) {
		t.Fatalf("PEXPIRETIME of SET PX 1000 after a +900ms jump is %v from host now+1.9s, want ±15ms", d)
	}
	time.Sleep(500 * time.Millisecond)
	if a.Exists(ctx, "k2").Val() != 1 {
		t.Fatal("key set with PX 1000 after the jump gone after 500ms")
	}

	// PXAT host now + 500ms is already past on n1 (900ms ahead), not on n2.
	pxat := time.Now().Add(500 * time.Millisecond).UnixMilli()
	for _, cl := range []*redis.Client{a, b} {
		if err := cl.Do(ctx, "SET", "k3", "v", "PXAT", pxat).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if a.Exists(ctx, "k3").Val() != 0 {
		t.Fatal("n1 kept a key whose PXAT its clock has passed")
	}
	if b.Exists(ctx, "k3").Val() != 1 {
		t.Fatal("n2 dropped a key whose PXAT is 500ms ahead")
	}
}

// A rate makes TIME advance that much faster; back at rate 1 the offset
// reached is kept (no jump back).
func TestRealClockRate(t *testing.T) {
	c := startClocked(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := c.AdminClient(c.Nodes[0])
	clock := c.Nodes[0].Clock
	if _, err := clock.SetRate(3); err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	s1, err := a.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	s2, err := a.Time(ctx).Result()
	t2 := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	host, server := t2.Sub(t1), s2.Sub(s1)
	if ratio := float64(server) / float64(host); ratio < 2.8 || ratio > 3.2 {
		t.Fatalf("at rate 3 the server's TIME advanced %v while the host's %v (×%.2f), want ×3±0.2", server, host, ratio)
	}
	kept, err := clock.SetRate(1)
	if err != nil {
		t.Fatal(err)
	}
	if kept < 500*time.Millisecond {
		t.Fatalf("offset after 300ms at rate 3 is %v, want about 600ms", kept)
	}
	if off := offsetOf(t, ctx, a); !near(off, kept, 10*time.Millisecond) {
		t.Fatalf("back at rate 1 the server is %v off the host, want the %v it reached ±10ms", off, kept)
	}
}

// With the shim disabled the nodes have no clock and ClockWhy says why.
func TestRealClockDisabled(t *testing.T) {
	t.Setenv(NoRealClockEnv, "off")
	c := startProc(t, Spec{Topology: Single, RealClock: true})
	if c.Nodes[0].Clock != nil {
		t.Fatal("node has a real clock although " + NoRealClockEnv + "=off")
	}
	if !strings.Contains(c.ClockWhy, "unavailable") || !strings.Contains(c.ClockWhy, NoRealClockEnv) {
		t.Fatalf("ClockWhy = %q, want why the real clock is unavailable", c.ClockWhy)
	}
}

// The shim is built once per source into the cache and reused; without a
// compiler the error says so.
func TestBuildShimCache(t *testing.T) {
	testenv.Need(t, "gcc")
	dir := t.TempDir()
	p, err := buildShim(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Size() == 0 {
		t.Fatalf("built shim %s: %v", p, err)
	}
	delete(shimBuilt, dir) // as a new process would: found on disk
	if p2, err := buildShim(dir); err != nil || p2 != p {
		t.Fatalf("second build = %q, %v; want the cached %q", p2, err, p)
	}
	if st2, _ := os.Stat(p); !st2.ModTime().Equal(st.ModTime()) {
		t.Fatal("the cached shim was rebuilt")
	}
	t.Setenv("CC", "lockchaos-no-such-cc")
	if _, err := buildShim(t.TempDir()); err == nil || !strings.Contains(err.Error(), "lockchaos-no-such-cc") {
		t.Fatalf("build without a compiler: err = %v, want it to name the compiler", err)
	}
}
