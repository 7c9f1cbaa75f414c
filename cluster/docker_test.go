package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/lockchaos/lockchaos/internal/testenv"
)

// requireDocker skips a test when no docker engine or image is there,
// except where LOCKCHAOS_REQUIRE_DOCKER is set (CI, after it built the
// image): there a missing engine or image fails the test instead of
// quietly skipping it.
func requireDocker(t *testing.T) {
	t.Helper()
	if err := DockerAvailable(context.Background(), TestImage()); err != nil {
		testenv.Missing(t, "LOCKCHAOS_REQUIRE_DOCKER", "docker backend unavailable: %v", err)
	}
}

func TestDockerSingle(t *testing.T) {
	requireDocker(t)
	ctx := context.Background()
	dir := t.TempDir()
	c, err := Start(ctx, Spec{Backend: Docker, Topology: Single, Dir: dir, Image: TestImage()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	n := c.Nodes[0]
	dn := n.Ctl.(*dockerNode)
	id := dn.ctr.GetContainerID()

	cl := c.NewClient(c.Endpoints()[0], ClientOptions{Timeout: 300 * time.Millisecond})
	if err := cl.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := cl.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET k = %q, %v", v, err)
	}
	if st := n.Ctl.State(); st != "running" {
		t.Fatalf("state %q, want running", st)
	}
	if n.Ctl.Pid() == 0 {
		t.Fatal("no pid")
	}

	if err := n.Ctl.Pause(); err != nil {
		t.Fatal(err)
	}
	if st := n.Ctl.State(); st != "paused" {
		t.Errorf("state %q, want paused", st)
	}
	t0 := time.Now()
	err = cl.Ping(ctx).Err()
	if err == nil || !IsTimeout(err) {
		t.Errorf("PING on a paused node: %v after %v, want a timeout", err, time.Since(t0))
	}
	if err := n.Ctl.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := waitReady(ctx, n.Addr, 5*time.Second, nil, 0); err != nil {
		t.Fatal(err)
	}
	if v, err := cl.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("after resume GET k = %q, %v", v, err)
	}

	// Kill, then restart empty: a fresh container on the same port.
	if err := n.Ctl.Kill(); err != nil {
		t.Fatal(err)
	}
	if st := n.Ctl.State(); st != "gone" {
		t.Errorf("state after kill %q, want gone", st)
	}
	if err := n.Ctl.Restart(ctx, true); err != nil {
		t.Fatal(err)
	}
	if dn.ctr.GetContainerID() == id {
		t.Error("empty restart reused the container")
	}
	if n, err := cl.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Errorf("after empty restart EXISTS k = %d, %v; want 0", n, err)
	}
	id2 := dn.ctr.GetContainerID()

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	prov := dn.dc.prov
	for _, cid := range []string{id, id2} {
		if _, err := prov.Client().ContainerInspect(ctx, cid, client.ContainerInspectOptions{}); err == nil {
			t.Errorf("container %.12s still exists after Stop", cid)
		}
	}
}

func TestDockerRestartKeepsContainer(t *testing.T) {
	requireDocker(t)
	ctx := context.Background()
	c, err := Start(ctx, Spec{Backend: Docker, Topology: Independent, Nodes: 2, AOF: true, Dir: t.TempDir(), Image: TestImage()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	if len(c.Endpoints()) != 2 {
		t.Fatalf("%d endpoints", len(c.Endpoints()))
	}
	n := c.Nodes[1]
	cl := c.AdminClient(n)
	if err := cl.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	id := n.Ctl.(*dockerNode).ctr.GetContainerID()
	if err := n.Ctl.Restart(ctx, false); err == nil {
		t.Fatal("restart of a running node succeeded")
	}
	if err := n.Ctl.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.Ctl.Restart(ctx, false); err != nil {
		t.Fatal(err)
	}
	if got := n.Ctl.(*dockerNode).ctr.GetContainerID(); got != id {
		t.Error("non-empty restart replaced the container")
	}
	if v, err := cl.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Errorf("after restart with AOF GET k = %q, %v", v, err)
	}
}

func TestDockerProxied(t *testing.T) {
	requireDocker(t)
	ctx := context.Background()
	c, err := Start(ctx, Spec{Backend: Docker, Proxy: true, Dir: t.TempDir(), Image: TestImage()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	n := c.Nodes[0]
	undo, err := c.Latency(n, 30*time.Millisecond, 0)
	if err != nil {
		t.Fatal(err)
	}
	rtt, err := c.MeasurePing(ctx, n, time.Second)
	undo()
	if err != nil || rtt < 30*time.Millisecond {
		t.Errorf("PING through the proxy with 30ms latency: %v, %v", rtt, err)
	}
}

// The sentinel topology runs on containers: three data nodes and three
// sentinels, each a container; a killed master is replaced by the sentinels,
// the failover client follows, and the old master restarted empty (a new
// container) rejoins as a replica.
func TestDockerSentinel(t *testing.T) {
	requireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Spec{Backend: Docker, Topology: Sentinel, Dir: t.TempDir(), Image: TestImage()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	if len(c.Nodes) != 3 || len(c.Sentinels) != 3 {
		t.Fatalf("nodes %d sentinels %d, want 3 and 3", len(c.Nodes), len(c.Sentinels))
	}
	for _, n := range append(append([]*Node{}, c.Nodes...), c.Sentinels...) {
		if _, ok := n.Ctl.(*dockerNode); !ok {
			t.Fatalf("%s is a %T, want a container", n.Name, n.Ctl)
		}
	}
	cl := c.NewClient(c.Endpoints()[0], ClientOptions{Timeout: 300 * time.Millisecond})
	if err := cl.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	old, err := c.CurrentMaster(ctx)
	if err != nil || old != c.Nodes[0] {
		t.Fatalf("CurrentMaster = %v, %v; want n1", old, err)
	}
	if err := old.Ctl.Kill(); err != nil {
		t.Fatal(err)
	}
	nm, _, err := c.WaitNewMaster(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
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
	if _, err := Start(ctx, Spec{Backend: Docker, Topology: "ring", Image: TestImage()}); !errors.Is(err, ErrBadSpec) {
		t.Errorf("topology ring on docker: %v, want ErrBadSpec", err)
	}
}

// The cluster topology runs on containers too: it forms, a killed shard
// master's replica takes over, and the old master restarted empty (a new
// container) rejoins as a replica because its cluster config file outlived
// the container.
func TestDockerCluster(t *testing.T) {
	requireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Spec{Backend: Docker, Topology: RedisCluster, Dir: t.TempDir(), Image: TestImage(), HotKey: "{lock}"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	if len(c.Nodes) != 6 {
		t.Fatalf("%d nodes, want 6", len(c.Nodes))
	}
	cl := c.NewClient(c.Endpoints()[0], ClientOptions{Timeout: 300 * time.Millisecond})
	if err := cl.Set(ctx, "{lock}", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	old, err := c.CurrentMaster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Ctl.Kill(); err != nil {
		t.Fatal(err)
	}
	nm, _, err := c.WaitNewMaster(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Ctl.Restart(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReplicating(ctx, old); err != nil {
		t.Fatalf("old master %s after an empty restart: %v (want a replica of %s)", old.Name, err, nm.Name)
	}
	if m, err := c.CurrentMaster(ctx); err != nil || m != nm {
		t.Fatalf("master after the rejoin: %v, %v; want %s", m, err, nm.Name)
	}
}
