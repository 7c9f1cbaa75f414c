package cluster

import (
	"context"
	"errors"
	"testing"
	"time"
)

func startProxied(t *testing.T) *Cluster {
	t.Helper()
	backend := Process
	if _, err := lookRedisServer(""); err != nil {
		backend = Embedded
	}
	c, err := Start(context.Background(), Spec{Backend: backend, Proxy: true, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	return c
}

func TestProxyRoutesClients(t *testing.T) {
	c := startProxied(t)
	n := c.Nodes[0]
	if n.ProxyAddr == "" || n.ProxyAddr == n.ServerAddr || c.Endpoints()[0].Addr != n.ProxyAddr || !c.Proxied(n) {
		t.Fatalf("node %+v, endpoint %+v", n, c.Endpoints()[0])
	}
	ctx := context.Background()
	cl := c.NewClient(c.Endpoints()[0], ClientOptions{})
	if err := cl.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.AdminClient(n).Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET past the proxy = %q, %v", v, err)
	}

	// Without Spec.Proxy there is nothing to cut.
	plain, err := Start(ctx, Spec{Backend: Embedded})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Stop()
	if _, err := plain.Partition(plain.Nodes[0], "reset", "both"); !errors.Is(err, ErrBadSpec) {
		t.Errorf("partition without proxy: %v", err)
	}
	if _, err := c.Partition(n, "bogus", "both"); !errors.Is(err, ErrBadSpec) {
		t.Errorf("bad mode: %v", err)
	}
	if _, err := c.Partition(n, "drop", "sideways"); !errors.Is(err, ErrBadSpec) {
		t.Errorf("bad direction: %v", err)
	}
	if _, err := c.Latency(n, 10*time.Millisecond, 20*time.Millisecond); !errors.Is(err, ErrBadSpec) {
		t.Errorf("jitter > latency: %v", err)
	}
}

func TestProxyLatency(t *testing.T) {
	c := startProxied(t)
	n := c.Nodes[0]
	ctx := context.Background()
	before, err := c.MeasurePing(ctx, n, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	undo, err := c.Latency(n, 50*time.Millisecond, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Toxics(n); len(got) != 1 || got[0] != "latency/downstream" {
		t.Errorf("toxics %v", got)
	}
	during, err := c.MeasurePing(ctx, n, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// A client connected before the toxic is slowed too.
	cl := c.NewClient(c.Endpoints()[0], ClientOptions{})
	t0 := time.Now()
	if err := cl.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	undo()
	undo() // idempotent
	after, err := c.MeasurePing(ctx, n, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("PING before %v, with 50ms latency %v, after %v", before, during, after)
	if during < 50*time.Millisecond || during > 250*time.Millisecond {
		t.Errorf("PING with 50ms latency took %v", during)
	}
	if d := time.Since(t0); d < 50*time.Millisecond {
		t.Errorf("client PING with latency took %v", d)
	}
	if after > 40*time.Millisecond || len(c.Toxics(n)) != 0 {
		t.Errorf("after heal: PING %v, toxics %v", after, c.Toxics(n))
	}
}

func TestProxyPartition(t *testing.T) {
	c := startProxied(t)
	n := c.Nodes[0]
	ctx := context.Background()
	admin := c.AdminClient(n) // bypasses the proxy
	cl := c.NewClient(c.Endpoints()[0], ClientOptions{Timeout: 300 * time.Millisecond, PoolSize: 2})
	if err := cl.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	works := func(what string) {
		t.Helper()
		// Pooled connections hit by the cut are discarded by their error;
		// every command after the heal must succeed.
		for i := 0; i < 5; i++ {
			if err := cl.Ping(ctx).Err(); err != nil {
				t.Fatalf("%s: PING %d: %v", what, i, err)
			}
		}
	}

	// reset: commands fail fast, on pooled and new connections alike.
	undo, err := c.Partition(n, "reset", "both")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		err := cl.Set(ctx, "r", i, 0).Err()
		if d := time.Since(t0); err == nil || IsTimeout(err) || d > 150*time.Millisecond {
			t.Errorf("reset: SET %d: %v after %v, want a fast failure", i, err, d)
		}
	}
	if _, err := c.MeasurePing(ctx, n, 300*time.Millisecond); err == nil || IsTimeout(err) {
		t.Errorf("reset: measured PING: %v", err)
	}
	undo()
	works("after reset heal")

	// drop: commands time out; to-node loses the request, from-node the reply.
	for _, tc := range []struct {
		dir      string
		executed bool
	}{{"both", false}, {"to-node", false}, {"from-node", true}} {
		key := "d-" + tc.dir
		undo, err := c.Partition(n, "drop", tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		err = cl.Set(ctx, key, "x", 0).Err()
		if d := time.Since(t0); !IsTimeout(err) || d < 250*time.Millisecond {
			t.Errorf("drop %s: SET: %v after %v, want a timeout", tc.dir, err, d)
		}
		got, _ := admin.Exists(ctx, key).Result()
		if (got == 1) != tc.executed {
			t.Errorf("drop %s: key written on the server = %v, want %v", tc.dir, got == 1, tc.executed)
		}
		if _, err := c.MeasurePing(ctx, n, 200*time.Millisecond); !IsTimeout(err) {
			t.Errorf("drop %s: measured PING: %v", tc.dir, err)
		}
		undo()
		works("after drop " + tc.dir + " heal")
	}
}
