package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/internal/testenv"
)

// NoConnCheck skips go-redis's liveness probe on pool checkout: after the
// server closes the connections, a default client redials before its next
// command, a NoConnCheck client finds out by that command failing.
func TestNoConnCheckSkipsPoolProbe(t *testing.T) {
	ctx := context.Background()
	c := startSingle(t)
	ep := c.Endpoints()[0]
	probed := c.NewClient(ep, ClientOptions{PoolSize: 1})
	unprobed := c.NewClient(ep, ClientOptions{PoolSize: 1, NoConnCheck: true})
	for _, cl := range []redis.UniversalClient{probed, unprobed} {
		if err := cl.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	admin := c.AdminClient(c.Nodes[0])
	n, err := admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Result()
	if err != nil || n < 2 {
		t.Fatalf("CLIENT KILL = %d, %v (want both clients' connections)", n, err)
	}
	time.Sleep(50 * time.Millisecond) // the FIN reaches the clients' sockets
	if err := probed.Ping(ctx).Err(); err != nil {
		t.Errorf("default client after the server closed its connection: %v (the probe should have redialed)", err)
	}
	if err := unprobed.Ping(ctx).Err(); err == nil {
		t.Error("NoConnCheck client's first command after the close succeeded: the pool still probes")
	}
	if err := unprobed.Ping(ctx).Err(); err != nil {
		t.Errorf("NoConnCheck client does not recover on the next command: %v", err)
	}
}

// A lock client reaches a restarted node as soon as it listens, however many
// of its dials failed while the node was down: go-redis's own dial breaker
// would answer with the last dial error for a second or more.
func TestFailedDialsDoNotLockOutANode(t *testing.T) {
	ctx := context.Background()
	c := startSingle(t)
	cl := c.NewClient(c.Endpoints()[0], ClientOptions{PoolSize: 2, Timeout: 200 * time.Millisecond})
	if err := cl.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	n := c.Nodes[0]
	if err := n.Ctl.Kill(); err != nil {
		t.Fatal(err)
	}
	for i := range 6 { // three times the pool size
		err := cl.Ping(ctx).Err()
		if err == nil {
			t.Fatalf("PING %d to a killed node succeeded", i)
		}
		if !strings.Contains(err.Error(), "refused") {
			t.Fatalf("PING %d to a killed node: %v (want the dial's own error)", i, err)
		}
	}
	if err := n.Ctl.Restart(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := cl.Ping(ctx).Err(); err != nil {
		t.Fatalf("first PING after the node is back: %v (the pool locked the node out)", err)
	}
}

// startSingle starts one redis-server process, stopped when the test ends.
func startSingle(t *testing.T) *Cluster {
	t.Helper()
	testenv.Need(t, "redis-server")
	c, err := Start(context.Background(), Spec{Backend: Process, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	return c
}
