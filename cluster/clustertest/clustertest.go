// Package clustertest starts Redis deployments for tests of other packages:
// on the process backend, in the test's temp dir, skipped only when the
// binaries are not installed (any other failure to start fails the test),
// and checked after Stop: no redis process the test saw may be left alive.
package clustertest

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// Cluster is a started deployment that remembers every pid it saw.
type Cluster struct {
	*cluster.Cluster
	mu   sync.Mutex
	pids map[int]string
}

// Start starts spec (Backend and Dir are set here) and stops it when the
// test ends.
func Start(tb testing.TB, spec cluster.Spec) *Cluster {
	tb.Helper()
	testenv.Need(tb, "redis-server")
	if spec.Topology == cluster.Sentinel {
		testenv.Need(tb, "redis-sentinel")
	}
	spec.Backend, spec.Dir = cluster.Process, tb.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	c, err := cluster.Start(ctx, spec)
	if err != nil {
		tb.Fatalf("start %s: %v", spec.Topology, err)
	}
	pc := &Cluster{Cluster: c, pids: map[int]string{}}
	pc.Seen()
	tb.Cleanup(func() {
		pc.Seen()
		if err := c.Stop(); err != nil {
			tb.Errorf("stop: %v", err)
		}
		for pid, name := range pc.pids {
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				tb.Errorf("%s pid %d still alive after Stop (kill 0: %v)", name, pid, err)
			}
		}
	})
	return pc
}

// Seen records the current pid of every node (call it after a restart).
func (pc *Cluster) Seen() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for _, n := range append(append([]*cluster.Node{}, pc.Nodes...), pc.Sentinels...) {
		if pid := n.Ctl.Pid(); pid > 0 {
			pc.pids[pid] = n.Name
		}
	}
}

// PidOf returns a pid the node named name had, 0 if none was seen.
func (pc *Cluster) PidOf(name string) int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for pid, n := range pc.pids {
		if n == name {
			return pid
		}
	}
	return 0
}
