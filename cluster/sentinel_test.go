package cluster

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/testenv"
)

// startProc starts a topology on the process backend in a temp dir and
// checks, after Stop, that no process it started is alive.
func startProc(t *testing.T, spec Spec) *Cluster {
	t.Helper()
	testenv.Need(t, "redis-server")
	if spec.Topology == Sentinel {
		testenv.Need(t, "redis-sentinel")
	}
	spec.Backend, spec.Dir = Process, t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	c, err := Start(ctx, spec)
	if err != nil {
		t.Fatalf("start %s: %v", spec.Topology, err)
	}
	var procs []*procNode
	for _, n := range append(append([]*Node{}, c.Nodes...), c.Sentinels...) {
		procs = append(procs, n.Ctl.(*procNode))
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
		for _, p := range procs {
			assertGone(t, p)
		}
	})
	return c
}

// assertGone checks that no process p ever ran is still alive.
func assertGone(t *testing.T, p *procNode) {
	t.Helper()
	for _, pid := range p.pids() {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("redis pid %d (port %d) still alive after Stop (kill 0: %v)", pid, p.port, err)
		}
	}
}

func TestSentinelTopology(t *testing.T) {
	start := time.Now()
	c := startProc(t, Spec{Topology: Sentinel})
	t.Logf("sentinel topology up in %v", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if len(c.Nodes) != 3 || len(c.Sentinels) != 3 {
		t.Fatalf("nodes %d sentinels %d, want 3 and 3", len(c.Nodes), len(c.Sentinels))
	}
	m, err := c.CurrentMaster(ctx)
	if err != nil || m != c.Nodes[0] {
		t.Fatalf("CurrentMaster = %v, %v; want n1", m, err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatalf("WaitHealthy: %v", err)
	}
	ep := c.Endpoints()
	if len(ep) != 1 || ep[0].MasterName == "" || len(ep[0].SentinelAddrs) != 3 {
		t.Fatalf("endpoints %+v", ep)
	}
	cl := c.NewClient(ep[0], ClientOptions{})
	if err := cl.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through the failover client: %v", err)
	}
	// The write reaches the replicas through the replication proxies.
	for _, n := range c.Nodes[1:] {
		err := poll(ctx, func() error { return c.AdminClient(n).Get(ctx, "k").Err() })
		if err != nil {
			t.Errorf("replica %s never got k: %v", n.Name, err)
		}
	}
}

func TestSentinelFailoverClientFollowsMaster(t *testing.T) {
	c := startProc(t, Spec{Topology: Sentinel})
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cl := c.NewClient(c.Endpoints()[0], ClientOptions{Timeout: 300 * time.Millisecond})
	if err := cl.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	old := c.Nodes[0]
	killed := time.Now()
	if err := old.Ctl.Kill(); err != nil {
		t.Fatal(err)
	}
	var nm *Node
	err := poll(ctx, func() error {
		n, err := c.CurrentMaster(ctx)
		if err != nil {
			return err
		}
		if n == old {
			return errors.New("still the old master")
		}
		nm = n
		return nil
	})
	if err != nil {
		t.Fatalf("no failover: %v", err)
	}
	t.Logf("new master %s after %v", nm.Name, time.Since(killed).Round(time.Millisecond))
	err = poll(ctx, func() error { return cl.Set(ctx, "after", "1", 0).Err() })
	if err != nil {
		t.Fatalf("failover client never wrote to the new master: %v", err)
	}
	if v, err := c.AdminClient(nm).Get(ctx, "after").Result(); err != nil || v != "1" {
		t.Fatalf("the write did not land on the new master %s: %q %v", nm.Name, v, err)
	}
	if err := old.Ctl.Restart(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := c.ReplicaOf(ctx, old, nm); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatalf("old master did not rejoin: %v", err)
	}
}

func TestReplicationDelay(t *testing.T) {
	c := startProc(t, Spec{Topology: Sentinel})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, rep := c.Nodes[0], c.Nodes[1]
	if err := c.SetReplicationDelay(m, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	set := time.Now()
	if err := c.AdminClient(m).Set(ctx, "lag", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rc := c.AdminClient(rep)
	err := poll(ctx, func() error { return rc.Get(ctx, "lag").Err() })
	lag := time.Since(set)
	if err != nil || lag < 450*time.Millisecond || lag > 3*time.Second {
		t.Fatalf("replica got the key after %v (%v), want about 500ms", lag, err)
	}
	t.Logf("replica lag with 500ms delay: %v", lag.Round(time.Millisecond))
	if err := c.SetReplicationDelay(m, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond) // let queued bytes drain
	set = time.Now()
	if err := c.AdminClient(m).Set(ctx, "nolag", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := poll(ctx, func() error { return rc.Get(ctx, "nolag").Err() }); err != nil || time.Since(set) > 300*time.Millisecond {
		t.Fatalf("after undo the replica got the key after %v (%v)", time.Since(set), err)
	}
	if err := c.SetReplicationDelay(&Node{}, time.Second); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("delay on a node without a proxy: %v, want ErrUnsupported", err)
	}
}
