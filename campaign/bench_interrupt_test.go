package campaign

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/report"
	"github.com/lockchaos/lockchaos/runner"
)

// An interrupt during a lock's run keeps that run (its numbers, its server
// cost, marked interrupted) and names the locks it left unbenched.
func TestBenchInterrupted(t *testing.T) {
	testenv.Need(t, "redis-server")
	out := filepath.Join(t.TempDir(), "bench")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancel once the first lock's history has events: mid-run, whatever
	// the machine's speed.
	go func() {
		hist := filepath.Join(out, "simple", "history.lch")
		for ctx.Err() == nil {
			if st, err := os.Stat(hist); err == nil && st.Size() > 0 {
				time.Sleep(300 * time.Millisecond)
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	b, err := RunBench(ctx, BenchOptions{Locks: []string{"simple", "watchdog"}, Clients: 4, Keys: 4, Duration: 30 * time.Second,
		Nodes: 1, Out: out, Setup: runner.Setup{Backend: cluster.Process}})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Locks) != 1 || !slices.Equal(b.NotRun, []string{"watchdog"}) {
		t.Fatalf("locks %+v, not run %v: want simple benched, watchdog not run", b.Locks, b.NotRun)
	}
	l := b.Locks[0]
	if !l.Interrupted || l.Cycles == 0 || l.Server == nil || l.Server.CommandsPerCycle < 2 {
		t.Fatalf("simple: interrupted %v, cycles %d, server %+v: want the cut run kept with its cost", l.Interrupted, l.Cycles, l.Server)
	}
	md := report.BenchMarkdown(b)
	if !strings.Contains(md, "not run: watchdog") || !strings.Contains(md, "| simple (interrupted) |") {
		t.Fatalf("markdown hides the interrupt:\n%s", md)
	}
}
