package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/testenv"
)

// The CLI's default run directory is relative (runs/...). redis-server
// changes into --dir before it opens --logfile, so a relative path must
// still start a node and leave its log where the run directory says.
func TestProcessBackendRelativeDir(t *testing.T) {
	testenv.Need(t, "redis-server")
	t.Chdir(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Start(ctx, Spec{Topology: Single, Backend: Process, Dir: filepath.Join("runs", "rel")})
	if err != nil {
		t.Fatalf("start with a relative run directory: %v", err)
	}
	defer c.Stop()
	if err := c.AdminClient(c.Nodes[0]).Ping(ctx).Err(); err != nil {
		t.Fatalf("ping: %v", err)
	}
	if _, err := os.Stat(filepath.Join("runs", "rel", "nodes", "n1.log")); err != nil {
		t.Fatalf("node log not in the run directory: %v", err)
	}
}

// A node that lost its port to another run's server between freePort and
// its own bind must not take that server's PING for its own: the wait
// reads the answering server's process id and goes on until the node's
// own start fails (startFresh then picks another port).
func TestWaitReadyRefusesAnotherServer(t *testing.T) {
	other := startSingle(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addr := other.Nodes[0].Addr
	pid := other.Nodes[0].Ctl.(*procNode).cmd.Process.Pid
	if err := waitReady(ctx, addr, 2*time.Second, nil, pid); err != nil {
		t.Fatalf("the server's own pid: %v", err)
	}
	err := waitReady(ctx, addr, 300*time.Millisecond, nil, pid+100000)
	if err == nil || !strings.Contains(err.Error(), "another server") {
		t.Fatalf("another pid: %v, want the port answered by another server", err)
	}
	exited := errors.New("redis exited during start")
	if err := waitReady(ctx, addr, 2*time.Second, func() error { return exited }, pid+100000); !errors.Is(err, exited) {
		t.Fatalf("a node that exited: %v, want its exit", err)
	}
}
