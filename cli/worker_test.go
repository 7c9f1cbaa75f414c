package cli

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// Four `lockchaos worker` processes on loopback against one redis-server,
// two with a wall clock 50 ms off, then `lockchaos merge --expect`: the
// merged gc-pause is caught as the scenario expects of the simple lock
// (mutex and resource invalid) and the merged smoke is valid, as in one
// process (exit 0 both).
func TestWorkerProcessesMerge(t *testing.T) {
	testenv.Long(t)
	testenv.Need(t, "redis-server")
	runSlot(t)
	bin := lockchaosBinary(t)
	srv, err := cluster.Start(context.Background(), cluster.Spec{Backend: cluster.Process, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	addr := srv.Nodes[0].ServerAddr
	offsets := []string{"0s", "50ms", "-50ms", "0s"}
	for _, scenario := range []string{"gc-pause", "smoke"} {
		dir := t.TempDir()
		var dirs []string
		cmds := make([]*exec.Cmd, len(offsets))
		outs := make([]*syncBuffer, len(offsets))
		for i, off := range offsets {
			d := filepath.Join(dir, fmt.Sprintf("w%d", i))
			dirs = append(dirs, d)
			outs[i] = &syncBuffer{}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			t.Cleanup(cancel)
			cmds[i] = exec.CommandContext(ctx, bin, "worker", scenario, "--clients", "8", "--lock", "simple", "--addrs", addr,
				"--run-id", "cli"+scenario[:2], "--workers", "4", "--index", fmt.Sprint(i), "--clock-offset", off, "--out", d, "-q")
			cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
			if err := cmds[i].Start(); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range cmds {
			if err := c.Wait(); err != nil {
				t.Fatalf("%s worker %d: %v\n%s", scenario, i, err, outs[i].String())
			}
		}
		merge := exec.Command(bin, append([]string{"merge", "--expect", "--out", filepath.Join(dir, "merged")}, dirs...)...)
		out, err := merge.CombinedOutput()
		if err != nil {
			t.Errorf("merge %s: %v (want exit 0: as the scenario expects)\n%s", scenario, err, out)
		}
	}
}
