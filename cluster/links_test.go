package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/testenv"
)

// A delay on one client's link makes that client's command reach the
// server late, while another client's command to the same node, sent at
// the same instant, is not delayed. Both arrivals are measured at the
// server: by the keyspace notification each SET raises.
func TestLinkDelayHitsOneClientOnly(t *testing.T) {
	testenv.Need(t, "redis-server")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Start(ctx, Spec{Backend: Process, Links: 2, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	n := c.Nodes[0]
	admin := c.AdminClient(n)
	if err := admin.ConfigSet(ctx, "notify-keyspace-events", "K$").Err(); err != nil {
		t.Fatal(err)
	}
	sub := admin.PSubscribe(ctx, "__keyspace@0__:*")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	arrived := make(chan [2]any, 4)
	go func() {
		for m := range sub.Channel() {
			arrived <- [2]any{m.Channel, time.Now()}
		}
	}()
	a := c.NewClient(c.ClientEndpoints(0)[0], ClientOptions{Timeout: 3 * time.Second})
	b := c.NewClient(c.ClientEndpoints(1)[0], ClientOptions{Timeout: 3 * time.Second})
	if c.ClientEndpoints(0)[0].Addr == c.ClientEndpoints(1)[0].Addr || c.ClientEndpoints(0)[0].Addr == n.ServerAddr {
		t.Fatalf("clients share an address: %+v %+v", c.ClientEndpoints(0), c.ClientEndpoints(1))
	}
	// Open both connections before the fault.
	if err := a.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	const delay = 300 * time.Millisecond
	undo, err := c.LinkFault(0, n, "delay", "to-node", delay)
	if err != nil {
		t.Fatal(err)
	}
	defer undo()
	sent := time.Now()
	done := make(chan error, 2)
	go func() { done <- a.Set(ctx, "from-a", "1", 0).Err() }()
	go func() { done <- b.Set(ctx, "from-b", "1", 0).Err() }()
	got := map[string]time.Duration{}
	timeout := time.After(5 * time.Second)
	for len(got) < 2 {
		select {
		case m := <-arrived:
			got[m[0].(string)] = m[1].(time.Time).Sub(sent)
		case <-timeout:
			t.Fatalf("notifications after 5 s: %v", got)
		}
	}
	for i := 0; i < 2; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	da, db := got["__keyspace@0__:from-a"], got["__keyspace@0__:from-b"]
	t.Logf("arrival after send: delayed link %v, other link %v", da, db)
	if da < delay-10*time.Millisecond || da > delay+250*time.Millisecond {
		t.Errorf("client 0's SET reached the server %v after it was sent, want about %v", da, delay)
	}
	if db > 100*time.Millisecond {
		t.Errorf("client 1's SET reached the server %v after it was sent: its link was not delayed", db)
	}
	// Healed: client 0's next command is prompt again.
	undo()
	t0 := time.Now()
	if err := a.Ping(ctx).Err(); err != nil || time.Since(t0) > 100*time.Millisecond {
		t.Errorf("after undo: ping %v in %v", err, time.Since(t0))
	}
	if _, err := c.LinkFault(2, n, "delay", "to-node", delay); err == nil {
		t.Error("a link fault on a client without link proxies was accepted")
	}
}
