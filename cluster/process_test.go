package cluster

import (
	"context"
	"os"
	"path/filepath"
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
