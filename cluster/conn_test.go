package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// NoConnCheck skips go-redis's liveness probe on pool checkout: after the
// server closes the connections, a default client redials before its next
// command, a NoConnCheck client finds out by that command failing.
func TestNoConnCheckSkipsPoolProbe(t *testing.T) {
	if _, err := lookRedisServer(""); err != nil {
		t.Skip("needs redis-server:", err)
	}
	ctx := context.Background()
	c, err := Start(ctx, Spec{Backend: Process, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
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
