package runner_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// runWorkers runs scenario name's 8 clients as four workers against addr,
// two of them with a wall clock 50 ms off (one ahead, one behind), and
// returns their directories.
func runWorkers(t *testing.T, addr, name, runID string) []string {
	t.Helper()
	offsets := []time.Duration{0, 50 * time.Millisecond, -50 * time.Millisecond, 0}
	dirs := make([]string, len(offsets))
	errs := make([]error, len(offsets))
	var wg sync.WaitGroup
	for i, off := range offsets {
		s, err := scenarios.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		s.Workload.Clients = 8
		dirs[i] = filepath.Join(t.TempDir(), fmt.Sprintf("w%d", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = runner.Run(context.Background(), runner.Options{Scenario: s, Lock: "simple", Setup: runner.Setup{Backend: cluster.External,
				Addrs: []string{addr}}, Out: dirs[i], NoPlots: true,
				Worker: &runner.Worker{Index: i, Count: len(offsets), RunID: runID, Wait: 30 * time.Second, ClockOffset: off}})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	for i, off := range offsets {
		wi, err := runner.ReadWorkerInfo(dirs[i])
		if err != nil {
			t.Fatal(err)
		}
		// The server's clock is the worker's minus its offset: the
		// measurement must find the injected offset, within its own bound
		// (plus a loaded machine's scheduling).
		if d := wi.Start.OffsetNS + int64(off); d > wi.Start.ErrorNS+int64(2*time.Millisecond) || -d > wi.Start.ErrorNS+int64(2*time.Millisecond) {
			t.Errorf("worker %d (clock %v off): measured offset %v ± %v", i, off, time.Duration(wi.Start.OffsetNS), time.Duration(wi.Start.ErrorNS))
		}
		if want := []int{i, i + 4}; fmt.Sprint(wi.Clients) != fmt.Sprint(want) {
			t.Errorf("worker %d drove clients %v, want %v", i, wi.Clients, want)
		}
	}
	return dirs
}

// Four workers on loopback against one redis-server, two of them with a
// clock 50 ms off: merged, gc-pause is invalid (the holder frozen past its
// TTL, in the coordinator) and smoke valid, as in one process; the merged
// history records each client's clock uncertainty and the workers' keys
// and barrier are gone from the server afterwards.
func TestWorkersMergeLikeOneProcess(t *testing.T) {
	testenv.Long(t)
	testenv.Need(t, "redis-server")
	addr, admin := userRedis(t, "")
	for _, tc := range []struct {
		scenario string
		want     map[string]string
	}{
		{"gc-pause", map[string]string{"mutex": "invalid", "resource": "invalid"}},
		{"smoke", map[string]string{"mutex": "valid", "resource": "valid", "unlock": "valid", "liveness": "valid"}},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			runID := "t" + strings.ReplaceAll(tc.scenario, "-", "")
			dirs := runWorkers(t, addr, tc.scenario, runID)
			out := filepath.Join(t.TempDir(), "merged")
			res, _, err := runner.Merge(runner.MergeOptions{Dirs: dirs, Out: out})
			if err != nil {
				t.Fatal(err)
			}
			for c, v := range tc.want {
				if got := string(res.Checks[c].Verdict); got != v {
					t.Errorf("merged %s: %s %s, want %s (notes %v)", tc.scenario, c, got, v, res.Notes)
				}
			}
			if res.Stats.Cycles == 0 {
				t.Error("merged run has no cycles")
			}
			meta, err := history.RunMeta(history.FileIn(out))
			if err != nil {
				t.Fatal(err)
			}
			unc, _ := meta[history.MetaClockUncertainty].(map[string]any)
			if len(unc) != 8 {
				t.Errorf("clock uncertainty for %d clients, want 8: %v", len(unc), meta[history.MetaClockUncertainty])
			}
			// The merged run is an ordinary run directory: check re-checks it.
			if r2, _, err := runner.CheckDir(out, runner.EvalOptions{}); err != nil || r2.Verdict != res.Verdict {
				t.Errorf("check of the merged run: %v, %v (merge said %s)", r2, err, res.Verdict)
			}
			keys, err := admin.Keys(context.Background(), "lc:"+runID+"*").Result()
			if err != nil || len(keys) != 0 {
				t.Errorf("keys left on the server: %v (%v)", keys, err)
			}
		})
	}
}

// Merge refuses a set of directories that is not one run's workers, naming
// what is wrong, and never writes the merged directory then.
func TestMergeRefusesMismatchedWorkers(t *testing.T) {
	write := func(dir string, wi runner.WorkerInfo) string {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		b := fmt.Sprintf(`{"run_id":%q,"index":%d,"count":%d,"scenario":%q,"lock":"simple","seed":1}`, wi.RunID, wi.Index, wi.Count, wi.Scenario)
		if err := os.WriteFile(filepath.Join(dir, runner.WorkerFile), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	d := t.TempDir()
	a := write(filepath.Join(d, "a"), runner.WorkerInfo{RunID: "r1", Index: 0, Count: 2, Scenario: "smoke"})
	b := write(filepath.Join(d, "b"), runner.WorkerInfo{RunID: "r2", Index: 1, Count: 2, Scenario: "smoke"})
	c := write(filepath.Join(d, "c"), runner.WorkerInfo{RunID: "r1", Index: 0, Count: 2, Scenario: "smoke"})
	e := write(filepath.Join(d, "e"), runner.WorkerInfo{RunID: "r1", Index: 1, Count: 2, Scenario: "gc-pause"})
	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{[]string{a, b}, "run id r1"},
		{[]string{a, c}, "both worker 0"},
		{[]string{a}, "missing worker 1"},
		{[]string{a, e}, "scenario smoke"},
		{[]string{filepath.Join(d, "none")}, "not a worker's run directory"},
	} {
		out := filepath.Join(d, "out")
		_, code, err := runner.Merge(runner.MergeOptions{Dirs: tc.dirs, Out: out})
		if err == nil || code != runner.BadInput || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("merge %v: exit %d, %v; want exit 3 naming %q", tc.dirs, code, err, tc.want)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("merge %v left %s behind", tc.dirs, out)
		}
	}
}

// merge --wait (the Job started with the workers) waits for a worker that
// has not finished, and gives up after the wait naming the directory.
func TestMergeWaitsForWorkers(t *testing.T) {
	d := t.TempDir()
	start := time.Now()
	_, code, err := runner.Merge(runner.MergeOptions{Dirs: []string{filepath.Join(d, "w0")}, Out: filepath.Join(d, "out"), Wait: 1500 * time.Millisecond})
	if waited := time.Since(start); waited < 1500*time.Millisecond || waited > 10*time.Second {
		t.Errorf("merge --wait 1.5s returned after %v", waited)
	}
	if code != runner.BadInput || err == nil || !strings.Contains(err.Error(), "w0") {
		t.Errorf("exit %d, %v: want exit 3 naming w0", code, err)
	}
}

// A worker's options are checked before anything starts.
func TestWorkerOptionsRefused(t *testing.T) {
	s, err := scenarios.Load("smoke")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		w       runner.Worker
		backend string
		field   string
	}{
		{runner.Worker{Index: 0, Count: 9, RunID: "r"}, cluster.External, "workers"},
		{runner.Worker{Index: 2, Count: 2, RunID: "r"}, cluster.External, "index"},
		{runner.Worker{Index: 0, Count: 2, RunID: ""}, cluster.External, "run-id"},
		{runner.Worker{Index: 0, Count: 2, RunID: "a:b"}, cluster.External, "run-id"},
		{runner.Worker{Index: 0, Count: 2, RunID: "r"}, cluster.Process, "backend"},
	} {
		w := tc.w
		_, err := runner.Run(context.Background(), runner.Options{Scenario: s, Lock: "simple", Setup: runner.Setup{Backend: tc.backend,
			Addrs: []string{"127.0.0.1:1"}}, Out: filepath.Join(t.TempDir(), "w"), Worker: &w})
		var re *runner.Error
		if !errors.As(err, &re) || re.Class != runner.BadInput || re.Field != tc.field {
			t.Errorf("worker %+v on %s: %v, want exit 3 for field %s", tc.w, tc.backend, err, tc.field)
		}
	}
}
